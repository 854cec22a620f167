/**
 * Tenant limits (docs/api.md, "Tenant limits"): what one tenant may hold at once and how fast it
 * may ask, its usage, and the rule that decides whether a create fits. Types, constants and pure
 * functions only.
 */
import { millicoresOf } from './cpu.js';
import type { SandboxResources } from './sandbox.js';

/**
 * One tenant's limits. The held ones count the tenant's sandboxes in an active state
 * ({@link ACTIVE_SANDBOX_STATES}): `sandboxes` of them at once, with at most `cpu` cores,
 * `memoryMib` and `diskMib` MiB requested in all. `createsPerSecond` creates a second, with a
 * burst of `createBurst`: a token bucket of `createBurst` tokens refilled at `createsPerSecond`
 * a second, kept in the store for every API replica (contract/create-rate.ts);
 * `waits` long-polls and synchronous creates waiting at once (per API replica).
 */
export interface TenantLimits {
  sandboxes: number;
  cpu: number;
  memoryMib: number;
  diskMib: number;
  createsPerSecond: number;
  createBurst: number;
  waits: number;
  /**
   * The tenant's share of the task queues when they hold a backlog: Temporal's fairness weight
   * of its workflows (src/temporal/priority.ts; 0.001 to 1000, default 1).
   */
  fairnessWeight: number;
}

/** The sandbox states that hold a share of the tenant's limits. */
export const ACTIVE_SANDBOX_STATES = ['creating', 'running'] as const;

/** What a tenant's active sandboxes hold: their count, and their cores and MiB in all. */
export interface TenantUsage {
  sandboxes: number;
  cpu: number;
  memoryMib: number;
  diskMib: number;
}

/** A limit the store checks in the create's transaction, as the API names it. */
export type HeldLimitName = 'sandboxes' | 'cpu' | 'memory_mib' | 'disk_mib';

/** Every limit a 429 can name (`details.limit`): the held ones, the create rate and the waits. */
export type LimitName = HeldLimitName | 'creates_per_second' | 'waits';

/** A create that does not fit: the limit, the tenant's usage of it, the limit's value. */
export interface HeldLimitRefusal {
  limit: HeldLimitName;
  /** The tenant's usage before this create, in the limit's unit (sandboxes, cores, MiB). */
  usage: number;
  /** What this create asks for, in the same unit. */
  requested: number;
  limitValue: number;
}

/** The held limits in the order they are checked, with how usage and requests are read. */
const HELD_LIMITS: ReadonlyArray<{
  limit: HeldLimitName;
  usage: (usage: TenantUsage) => number;
  requested: (resources: SandboxResources) => number;
  value: (limits: TenantLimits) => number;
}> = [
  { limit: 'sandboxes', usage: (u) => u.sandboxes, requested: () => 1, value: (l) => l.sandboxes },
  { limit: 'cpu', usage: (u) => u.cpu, requested: (r) => r.cpu, value: (l) => l.cpu },
  {
    limit: 'memory_mib',
    usage: (u) => u.memoryMib,
    requested: (r) => r.memoryMib,
    value: (l) => l.memoryMib,
  },
  {
    limit: 'disk_mib',
    usage: (u) => u.diskMib,
    requested: (r) => r.diskMib,
    value: (l) => l.diskMib,
  },
];

/**
 * The first held limit a create of `resources` would pass, given the tenant's `usage`;
 * undefined when it fits. CPU is compared in millicores, so 0.1 + 0.2 cores fit in 0.3.
 */
export function exceededLimit(
  usage: TenantUsage,
  resources: SandboxResources,
  limits: Pick<TenantLimits, 'sandboxes' | 'cpu' | 'memoryMib' | 'diskMib'>,
): HeldLimitRefusal | undefined {
  for (const row of HELD_LIMITS) {
    const held = row.usage(usage);
    const requested = row.requested(resources);
    const value = row.value(limits as TenantLimits);
    const fits =
      row.limit === 'cpu'
        ? millicoresOf(held) + millicoresOf(requested) <= millicoresOf(value)
        : held + requested <= value;
    if (!fits) return { limit: row.limit, usage: held, requested, limitValue: value };
  }
  return undefined;
}
