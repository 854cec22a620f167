/**
 * When the client sends a request again: only what is safe to repeat (reads, and creates under
 * their idempotency key, which the API answers with the first create's operation), and only after
 * a failure that says nothing about the request itself: no answer, a gateway's 502 or 504, or 503
 * `unavailable` (the API cannot use its store, Temporal or the cluster right now). Between tries
 * it waits with exponential back-off and full jitter (AWS Architecture Blog, "Exponential Backoff
 * And Jitter"), or the answer's `Retry-After` when that is longer.
 */
import type { DurableSandboxError } from './errors.js';

/** How often and how patiently a request is tried. */
export interface RetryPolicy {
  /** Tries in all, the first included; 1 turns retries off. */
  attempts: number;
  /** The back-off's first ceiling, in ms; each retry doubles it. */
  initialDelayMs: number;
  /** The longest pause between two tries, in ms (a longer `Retry-After` is cut to it). */
  maxDelayMs: number;
}

/** Three tries, pauses of up to 250 ms, then 500 ms. */
export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  attempts: 3,
  initialDelayMs: 250,
  maxDelayMs: 5_000,
};

/** Statuses that say nothing about the request: the answer did not come from the API's work. */
const RETRYABLE_STATUSES: ReadonlySet<number> = new Set([0, 502, 504]);

/** Whether a try that failed with `error` may be sent again (when the request is repeatable). */
export function isRetryable(error: DurableSandboxError): boolean {
  return (
    RETRYABLE_STATUSES.has(error.status) || (error.status === 503 && error.code === 'unavailable')
  );
}

/**
 * The pause before retry number `retry` (1 for the second try), in ms.
 * @param random a number in [0, 1) (Math.random by default)
 */
export function retryDelayMs(
  policy: RetryPolicy,
  retry: number,
  error: DurableSandboxError,
  random: () => number = Math.random,
): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** (retry - 1));
  const backOff = Math.floor(random() * ceiling);
  const asked = error.retryAfterS === undefined ? 0 : error.retryAfterS * 1000;
  return Math.min(policy.maxDelayMs, Math.max(backOff, asked));
}
