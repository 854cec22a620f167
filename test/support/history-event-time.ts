/**
 * The time of a Temporal history event, as the tests read it: when the server recorded the
 * event, not when the test saw it.
 */
import { tsToMs } from '@temporalio/common/lib/time.js';
import type { temporal } from '@temporalio/proto';

/**
 * Epoch milliseconds of a history event's `eventTime` (a protobuf Timestamp: `seconds` since
 * the epoch and `nanos`), with the fraction of a millisecond kept: `tsToMs` of
 * `@temporalio/common` gives the whole ms (it truncates), the rest of `nanos` is added as a
 * fraction.
 *
 * The fraction matters to a bound counted in windows over the span between two events
 * (test/warm-pools.test.ts: `floor(span / window) + 1` signals): truncating both ends moves the
 * span by up to 1 ms either way, and one short at a window's edge lowers the bound under a
 * correct count. Against a whole-ms time (`Date.now()`, an ISO `updatedAt`), it changes no
 * comparison: a whole number `n <= t` exactly when `n <= floor(t)`.
 * @param event a history event from `fetchHistory()`; undefined when a test's search found none
 * @returns epoch ms, fractional
 * @throws Error when the event is missing or has no `eventTime`
 */
export function eventTimeMs(event: temporal.api.history.v1.IHistoryEvent | undefined): number {
  const time = event?.eventTime;
  if (!time) {
    throw new Error(`history event ${String(event?.eventId ?? '(none found)')} has no eventTime`);
  }
  return tsToMs(time) + ((time.nanos ?? 0) % 1_000_000) / 1_000_000;
}
