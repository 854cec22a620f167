/**
 * Keeping a long activity alive: the SDK's `heartbeat()` on a timer while a promise is pending.
 * The SDK throttles what it sends (at most one heartbeat per 80 % of the heartbeat timeout), so
 * a short interval costs nothing; cancellation reaches the activity with a heartbeat's answer
 * and shows up in `Context.current().cancellationSignal` / `cancelled`.
 */
import { heartbeat } from '@temporalio/activity';

/** How often a waiting activity heartbeats, in ms, unless told otherwise. */
export const HEARTBEAT_INTERVAL_MS = 1_000;

/**
 * Heartbeats now and every `intervalMs` until `work` settles.
 * @returns what `work` resolves to; rejects as `work` does
 * @throws Error when not called inside an activity (the SDK's `heartbeat` needs its context)
 */
export async function whileHeartbeating<T>(
  work: Promise<T>,
  intervalMs: number = HEARTBEAT_INTERVAL_MS,
): Promise<T> {
  heartbeat();
  const timer = setInterval(() => heartbeat(), intervalMs);
  try {
    return await work;
  } finally {
    clearInterval(timer);
  }
}
