/**
 * A tenant's create rate (docs/api.md, "Tenant limits"): a token bucket of `createBurst` tokens
 * that refills at `createsPerSecond` tokens a second; an admitted create takes one token, a
 * refused one takes nothing. Over any span of `t` seconds a tenant is admitted at most
 * `createBurst + createsPerSecond × t` creates. Pure arithmetic; the store keeps the bucket
 * (src/store/create-rate.ts) so every API replica and the worker's Nexus handler share it.
 *
 * Integers only, so no rounding drifts: tokens are counted in thousandths
 * ({@link MILLITOKENS_PER_TOKEN}) and time in epoch milliseconds; a rate of `r` creates a second
 * refills `r` millitokens a millisecond.
 */

/** Thousandths of a token in a token: the bucket's unit. */
export const MILLITOKENS_PER_TOKEN = 1_000;

/** A tenant's bucket as stored: its tokens (millitokens) at `updatedAtMs` (epoch ms). */
export interface CreateRateBucket {
  millitokens: number;
  updatedAtMs: number;
}

/** The rate a bucket refills at and what it holds when full. */
export interface CreateRate {
  /** Tokens added a second (an integer ≥ 1, `creates_per_second`). */
  perSecond: number;
  /** Tokens a full bucket holds: creates admitted at once after a quiet spell (`create_burst`). */
  burst: number;
}

/** What {@link takeCreateToken} decided. */
export type CreateRateTake =
  | {
      admitted: true;
      /** The bucket to store: one token fewer. */
      bucket: CreateRateBucket;
    }
  | {
      admitted: false;
      /** Milliseconds until the bucket holds one whole token again (≥ 1). */
      retryAfterMs: number;
      /** The tokens the bucket holds now, in millitokens (below one token). */
      millitokens: number;
    };

/**
 * The bucket at `nowMs`: refilled for the time since it was stored, never above `burst`. A clock
 * reading older than the bucket's (another replica's clock ahead of this one) refills nothing
 * and keeps the newer time, so a skewed clock can only admit fewer creates, never more.
 * @param bucket as stored; undefined for a tenant with none yet (a full bucket)
 */
export function refilledBucket(
  bucket: CreateRateBucket | undefined,
  rate: CreateRate,
  nowMs: number,
): CreateRateBucket {
  const capacity = rate.burst * MILLITOKENS_PER_TOKEN;
  if (bucket === undefined) return { millitokens: capacity, updatedAtMs: nowMs };
  const elapsedMs = Math.max(0, nowMs - bucket.updatedAtMs);
  return {
    millitokens: Math.min(capacity, bucket.millitokens + elapsedMs * rate.perSecond),
    updatedAtMs: Math.max(bucket.updatedAtMs, nowMs),
  };
}

/**
 * Takes one token for a create at `nowMs`: admitted with the bucket to store when the refilled
 * bucket holds a whole token; refused otherwise, with the time until it will (the bucket is
 * left as it was: a refusal costs nothing).
 * @param bucket as stored; undefined for a tenant with none yet
 */
export function takeCreateToken(
  bucket: CreateRateBucket | undefined,
  rate: CreateRate,
  nowMs: number,
): CreateRateTake {
  const now = refilledBucket(bucket, rate, nowMs);
  if (now.millitokens >= MILLITOKENS_PER_TOKEN) {
    return {
      admitted: true,
      bucket: {
        millitokens: now.millitokens - MILLITOKENS_PER_TOKEN,
        updatedAtMs: now.updatedAtMs,
      },
    };
  }
  return {
    admitted: false,
    retryAfterMs: Math.max(
      1,
      Math.ceil((MILLITOKENS_PER_TOKEN - now.millitokens) / rate.perSecond),
    ),
    millitokens: now.millitokens,
  };
}

/**
 * The creates a bucket holding `millitokens` has admitted and not yet refilled: `burst` less
 * the whole tokens it holds (what a `rate_limited` refusal's `details.usage` reports; equal to
 * `burst` when the bucket cannot admit one).
 */
export function createsOutstanding(millitokens: number, rate: CreateRate): number {
  return Math.max(0, rate.burst - Math.floor(millitokens / MILLITOKENS_PER_TOKEN));
}

/** A create the tenant's bucket refused: what a `rate_limited` refusal's `details` say. */
export interface CreateRateRefusal {
  /** {@link createsOutstanding}: admitted creates the bucket has not refilled. */
  usage: number;
  /** `creates_per_second`. */
  limitValue: number;
  /** `create_burst`. */
  burst: number;
  /** Milliseconds until the bucket holds one token (≥ 1). */
  retryAfterMs: number;
}
