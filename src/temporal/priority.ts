/**
 * Fairness between tenants in Temporal's task queues (docs/architecture.md, "Fairness between
 * tenants"): every workflow the service starts for a tenant carries the Temporal `Priority`
 * `{ fairnessKey: tenant, fairnessWeight }`, so a server with task queue fairness on
 * (`matching.enableFairness`) dispatches the backlog of one task queue to the tenants in
 * proportion to their weights instead of first come, first served. Activities and child
 * workflows inherit the priority of the workflow that schedules them (Temporal's `Priority`,
 * @temporalio/common priority.ts), so only starts set it.
 */
import { createHash } from 'node:crypto';
import type { Priority } from '@temporalio/common';
import { limitsOf, type TenantLimitsConfig } from '../config/index.js';
import { DEFAULT_TENANT_LIMITS } from '../config/tenant-limits.js';

/** The longest fairness key Temporal takes, in UTF-8 bytes (`Priority.fairnessKey`). */
export const FAIRNESS_KEY_MAX_BYTES = 64;

/**
 * The fairness key of a tenant: its id, or, for an id longer than
 * {@link FAIRNESS_KEY_MAX_BYTES} (a JWT claim may be), `sha256:` and 56 hex digits of its hash.
 */
export function fairnessKeyOf(tenant: string): string {
  if (Buffer.byteLength(tenant, 'utf8') <= FAIRNESS_KEY_MAX_BYTES) return tenant;
  return `sha256:${createHash('sha256').update(tenant).digest('hex').slice(0, 56)}`;
}

/**
 * The priority of a workflow started for `tenant`: its fairness key and the weight TENANT_LIMITS
 * gives it (`fairness_weight`, default 1). The API and the worker read the same TENANT_LIMITS;
 * a worker step passes its own (src/activities/index.ts `tenantLimits`): an eagerly dispatched
 * activity is told no priority by the server (v1.29.1), so it cannot take its workflow's.
 * @param limits TENANT_LIMITS as parsed; undefined: the built-in defaults (weight 1)
 */
export function tenantPriority(limits: TenantLimitsConfig | undefined, tenant: string): Priority {
  return {
    fairnessKey: fairnessKeyOf(tenant),
    fairnessWeight: limits
      ? limitsOf(limits, tenant).fairnessWeight
      : DEFAULT_TENANT_LIMITS.fairnessWeight,
  };
}
