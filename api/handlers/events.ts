/** The event feed's route (docs/webhooks.md, "The event feed"): `GET /v1/events`. */
import type { RequestHandler } from 'express';
import { tenantOf } from '../auth.js';
import type { AppDeps } from '../deps.js';
import { decodeEventCursor, encodeEventCursor } from '../event-cursor.js';
import { readEventsWhenAvailable } from '../event-feed.js';
import { parseEventListQuery } from '../validation.js';
import { eventPageToWire } from '../wire.js';

/** Handlers of the event feed. */
export function eventHandlers(deps: AppDeps) {
  /**
   * `GET /v1/events?after=&type=&sandbox=&limit=&wait=`: the tenant's kept events after the
   * cursor, oldest first, with the cursor after the last (`next_cursor`, the same place on an
   * empty page). With `wait`, a long-poll: answers as soon as an event past the cursor exists,
   * else an empty page at the timeout; it holds one of the tenant's `waits`
   * (api/tenant-admission.ts). 400 for a cursor of another tenant or filter.
   */
  const listEvents: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const query = parseEventListQuery(req.query);
    const filter = { tenant, types: query.types, sandboxId: query.sandbox };
    const afterSeq = query.after === undefined ? 0 : decodeEventCursor(query.after, filter);
    const gone = new AbortController();
    res.on('close', () => gone.abort());
    const release = query.waitMs > 0 ? deps.admission?.holdWait(tenant) : undefined;
    let events;
    try {
      events = await readEventsWhenAvailable(
        deps,
        tenant,
        { afterSeq, types: query.types, sandboxId: query.sandbox, limit: query.limit },
        query.waitMs,
        gone.signal,
      );
    } finally {
      release?.();
    }
    const lastSeq = events[events.length - 1]?.seq ?? afterSeq;
    res.json(eventPageToWire(events, encodeEventCursor(lastSeq, filter)));
  };

  return { listEvents };
}
