/**
 * Tenant admission (docs/api.md, "Tenant limits"): the refusals a client can act on, each a 429
 * with `Retry-After` and `details` naming the limit, the tenant's own usage of it and the
 * limit's value (never another tenant's figures).
 *
 * | limit                                     | code             | where it is enforced           | Retry-After            |
 * | ----------------------------------------- | ---------------- | ------------------------------ | ---------------------- |
 * | `sandboxes`, `cpu`, `memory_mib`, `disk_mib` | `quota_exceeded` | the store's create transaction (exact across replicas) | {@link HELD_LIMIT_RETRY_AFTER_S} |
 * | `creates_per_second` (+ `create_burst`)    | `rate_limited`   | the store's create transaction: one token bucket per tenant (contract/create-rate.ts), shared by every replica and the Nexus handler | until the bucket holds a token |
 * | `waits` (long-polls + synchronous creates) | `rate_limited`   | this replica (a counter)       | {@link WAITS_RETRY_AFTER_S} |
 *
 * `waits` holds per API process: behind N replicas a tenant may reach N times it (an operator
 * divides by the replica count when that matters).
 */
import { limitsOf, type Config } from '../config/index.js';
import type { CreateRateRefusal, HeldLimitRefusal, LimitName } from '../../contract/index.js';
import { ApiError } from './errors.js';
import { quotaRefusals } from './metrics.js';

/** `Retry-After` of a held limit: a share frees when one of the tenant's sandboxes ends. */
export const HELD_LIMIT_RETRY_AFTER_S = 30;

/** `Retry-After` of the `waits` limit: a long-poll ends within seconds of a change. */
export const WAITS_RETRY_AFTER_S = 1;

/** What each limit is called in a refusal's message. */
const LIMIT_WORDS: Record<LimitName, string> = {
  sandboxes: 'sandboxes at once (creating or running)',
  cpu: 'cores of its active sandboxes',
  memory_mib: 'MiB of memory of its active sandboxes',
  disk_mib: 'MiB of disk of its active sandboxes',
  creates_per_second: 'creates a second',
  waits: 'long-polls and synchronous creates waiting at once',
};

/** Counts the refusal (by limit, and by tenant when the operator turned that on). */
function count(config: Config, limit: LimitName, tenant: string): void {
  quotaRefusals(config.quotaMetricsTenantLabel).inc(
    config.quotaMetricsTenantLabel ? { limit, tenant } : { limit },
  );
}

/**
 * The 429 `quota_exceeded` of a create the store refused (src/store/tenant-usage.ts).
 * @returns the error to throw; counts it in the refusal metric
 */
export function heldLimitRefusal(
  config: Config,
  tenant: string,
  refusal: HeldLimitRefusal,
): ApiError {
  count(config, refusal.limit, tenant);
  return new ApiError(
    'quota_exceeded',
    `this tenant's limit of ${refusal.limitValue} ${LIMIT_WORDS[refusal.limit]} is reached: it ` +
      `holds ${refusal.usage} and the create asks for ${refusal.requested} more; delete a ` +
      'sandbox or ask the operator for a higher limit (GET /v1/quota shows the limits)',
    {
      limit: refusal.limit,
      usage: refusal.usage,
      requested: refusal.requested,
      limit_value: refusal.limitValue,
    },
    { headers: { 'Retry-After': String(HELD_LIMIT_RETRY_AFTER_S) } },
  );
}

/** A 429 `rate_limited` naming the create rate or the waits. */
function rateRefusal(
  config: Config,
  tenant: string,
  refused: { limit: 'creates_per_second' | 'waits'; usage: number; limitValue: number },
  retryAfterS: number,
  extra: Record<string, unknown> = {},
): ApiError {
  count(config, refused.limit, tenant);
  return new ApiError(
    'rate_limited',
    `this tenant's limit of ${refused.limitValue} ${LIMIT_WORDS[refused.limit]} is reached; ` +
      `try again in ${retryAfterS} s`,
    { limit: refused.limit, usage: refused.usage, limit_value: refused.limitValue, ...extra },
    { headers: { 'Retry-After': String(retryAfterS) } },
  );
}

/**
 * The 429 `rate_limited` of a create the tenant's token bucket refused (src/store/create-rate.ts):
 * `Retry-After` is the time until the bucket holds one token, in whole seconds (≥ 1).
 * @returns the error to throw; counts it in the refusal metric
 */
export function createRateRefusal(
  config: Config,
  tenant: string,
  refusal: CreateRateRefusal,
): ApiError {
  return rateRefusal(
    config,
    tenant,
    { limit: 'creates_per_second', usage: refusal.usage, limitValue: refusal.limitValue },
    Math.max(1, Math.ceil(refusal.retryAfterMs / 1000)),
    { burst: refusal.burst },
  );
}

/** One API process's per-replica admission: the waits of each tenant. */
export interface TenantAdmission {
  /**
   * Holds one of the tenant's `waits` until `release` is called (call it once, when the
   * long-poll or synchronous create answers).
   * @throws ApiError 429 `rate_limited` when the tenant holds all of them
   */
  holdWait(tenant: string): () => void;
  /** The waits the tenant holds on this replica now. */
  waitsHeld(tenant: string): number;
  /**
   * Remembers a refusal of the tenant's create-rate bucket until the bucket holds a token again
   * (`nowMs + retryAfterMs`, epoch ms), so this replica refuses the tenant's next creates before
   * then without asking the store. Exact, not an estimate: a bucket refills at a fixed rate and
   * other replicas and the Nexus handler only take from it, so it holds less than one token
   * until that time whatever they do (contract/create-rate.ts).
   */
  noteRateRefusal(tenant: string, refusal: CreateRateRefusal, nowMs: number): void;
  /**
   * The refusal a remembered empty bucket gives at `nowMs`, its `retryAfterMs` counted from
   * `nowMs`; undefined once the bucket may hold a token (the store decides then).
   */
  knownRateRefusal(tenant: string, nowMs: number): CreateRateRefusal | undefined;
}

/**
 * Builds the admission of one API process (createApp builds one per app).
 * @param config TENANT_LIMITS and whether refusals are counted by tenant
 */
export function createTenantAdmission(config: Config): TenantAdmission {
  const waits = new Map<string, number>();
  /** Tenant -> its bucket's last refusal and when the bucket holds a token again (epoch ms). */
  const emptyUntil = new Map<string, { refusal: CreateRateRefusal; untilMs: number }>();

  return {
    holdWait(tenant) {
      const limit = limitsOf(config.tenantLimits, tenant).waits;
      const held = waits.get(tenant) ?? 0;
      if (held >= limit) {
        throw rateRefusal(
          config,
          tenant,
          { limit: 'waits', usage: held, limitValue: limit },
          WAITS_RETRY_AFTER_S,
        );
      }
      waits.set(tenant, held + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        const now = (waits.get(tenant) ?? 1) - 1;
        if (now <= 0) waits.delete(tenant);
        else waits.set(tenant, now);
      };
    },

    waitsHeld(tenant) {
      return waits.get(tenant) ?? 0;
    },

    noteRateRefusal(tenant, refusal, nowMs) {
      emptyUntil.set(tenant, { refusal, untilMs: nowMs + refusal.retryAfterMs });
    },

    knownRateRefusal(tenant, nowMs) {
      const known = emptyUntil.get(tenant);
      if (!known) return undefined;
      if (nowMs >= known.untilMs) {
        emptyUntil.delete(tenant);
        return undefined;
      }
      return { ...known.refusal, retryAfterMs: known.untilMs - nowMs };
    },
  };
}
