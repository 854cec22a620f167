/**
 * The event feed's cursor (docs/webhooks.md, "The event feed"): an opaque token this service issued, naming a place
 * in the store's event sequence and bound to the tenant and the filter (`type`, `sandbox`) it was
 * issued for, as base64url JSON `[1, seq, binding]`. Callers must not build or parse it. A token
 * of another tenant or another filter is refused, so a cursor never silently reads a different
 * feed than the one it came from.
 */
import { createHash } from 'node:crypto';
import { ApiError } from './errors.js';

/** What a cursor is bound to: the tenant and the feed's filter. */
export interface FeedFilter {
  tenant: string;
  /** Event types asked for; empty: every type. */
  types: readonly string[];
  sandboxId?: string;
}

const VERSION = 1;

/** The binding of a filter: a digest of the tenant, the sorted types and the sandbox. */
function bindingOf(filter: FeedFilter): string {
  const key = JSON.stringify([filter.tenant, [...filter.types].sort(), filter.sandboxId ?? null]);
  return createHash('sha256').update(key).digest('base64url').slice(0, 22);
}

/** The cursor of the place after event number `seq` of the feed `filter` names. */
export function encodeEventCursor(seq: number, filter: FeedFilter): string {
  return Buffer.from(JSON.stringify([VERSION, seq, bindingOf(filter)]), 'utf8').toString(
    'base64url',
  );
}

function refused(message: string): ApiError {
  return new ApiError('invalid_request', `query.after ${message}`, {
    problems: [{ field: 'query.after', message }],
  });
}

/**
 * The event number a cursor names.
 * @throws ApiError `invalid_request` (400) when `token` is not a cursor this service issued, or
 *   was issued to another tenant or for another `type`/`sandbox` filter
 */
export function decodeEventCursor(token: string, filter: FeedFilter): number {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 3 ||
    parsed[0] !== VERSION ||
    !Number.isSafeInteger(parsed[1]) ||
    (parsed[1] as number) < 0 ||
    typeof parsed[2] !== 'string'
  ) {
    throw refused('is not a cursor this service issued');
  }
  if (parsed[2] !== bindingOf(filter)) {
    throw refused(
      'was issued to another tenant or for another type/sandbox filter; use a cursor with the filter it came with',
    );
  }
  return parsed[1] as number;
}
