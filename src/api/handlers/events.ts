/** The event feed's route (docs/webhooks.md, "The event feed"): `GET /v1/events`. */
import type { RequestHandler } from 'express';
import { tenantOf } from '../auth.js';
import type { AppDeps } from '../deps.js';
import { decodeEventCursor, encodeEventCursor } from '../event-cursor.js';
import { ApiError } from '../errors.js';
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
   * (src/api/tenant-admission.ts). 400 for a cursor of another tenant or filter; 410
   * `cursor_expired` for one older than the oldest kept event.
   */
  const listEvents: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const query = parseEventListQuery(req.query);
    const filter = { tenant, types: query.types, sandboxId: query.sandbox };
    const afterSeq = query.after === undefined ? 0 : decodeEventCursor(query.after, filter);
    await refuseExpiredCursor(deps, tenant, afterSeq);
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
    // Again after the read: a purge that committed meanwhile moved the horizon with its deletions.
    await refuseExpiredCursor(deps, tenant, afterSeq);
    const lastSeq = events[events.length - 1]?.seq ?? afterSeq;
    res.json(eventPageToWire(events, encodeEventCursor(lastSeq, filter)));
  };

  return { listEvents };
}

/**
 * Refuses a cursor some of whose next events were purged (docs/api.md, "Retention"): a purge
 * records, per tenant, the highest event number it deleted (src/store/retention.ts), so a cursor
 * after number `afterSeq` may have lost events of this tenant when that number is above it.
 * Another tenant's purged events never refuse it. The caller reads again from the oldest kept
 * event and de-duplicates on the event `id`.
 * @throws ApiError `cursor_expired` (410)
 */
async function refuseExpiredCursor(deps: AppDeps, tenant: string, afterSeq: number): Promise<void> {
  if (afterSeq === 0) return; // no cursor: from the oldest kept event
  const purged = await deps.store.retention.purgedThroughSeq(tenant);
  if (purged !== undefined && afterSeq < purged) {
    throw new ApiError(
      'cursor_expired',
      'query.after is older than the oldest kept event: events after it were purged ' +
        '(EVENT_RETENTION_HOURS); read again without after, from the oldest kept event',
      { purged_through_seq: purged },
    );
  }
}
