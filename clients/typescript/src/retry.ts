/**
 * When the client sends a request again: only what is safe to repeat (reads, and creates under
 * their idempotency key, which the API answers with the first create's operation), and only after
 * a failure that leaves the outcome unknown: no answer, or a gateway's 502 or 504. A read is also
 * sent again after 503 `unavailable` (the API cannot use its store, Temporal or the cluster right
 * now); a create is not: that answer is the API's own verdict on it (a create whose workflow
 * could not be started is marked failed, and its key answers `idempotency_conflict` from then
 * on, docs/api.md). Between tries it waits with exponential back-off and full jitter (AWS
 * Architecture Blog, "Exponential Backoff And Jitter"), or the answer's `Retry-After` when that
 * is longer.
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

/** Statuses that leave a request's outcome unknown: no answer (0), or a gateway's. */
const UNKNOWN_OUTCOME: ReadonlySet<number> = new Set([0, 502, 504]);

/** What a request is, for retries: a read, or a create under its idempotency key. */
export type RepeatableRequest = 'read' | 'create';

/** Whether a try of `request` that failed with `error` may be sent again. */
export function isRetryable(error: DurableSandboxError, request: RepeatableRequest): boolean {
  if (UNKNOWN_OUTCOME.has(error.status)) return true;
  return request === 'read' && error.status === 503 && error.code === 'unavailable';
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
