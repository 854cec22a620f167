/**
 * `GET /v1/quota` (docs/api.md, "Tenant limits"): the calling tenant's limits (TENANT_LIMITS)
 * and its usage: what its active sandboxes hold (from the store, as every create counts it) and
 * the waits it holds on the replica that answers. Only the caller's own figures.
 */
import type { RequestHandler } from 'express';
import { limitsOf } from '../../config/index.js';
import type { TenantLimits, TenantUsage } from '../../../contract/index.js';
import { tenantOf } from '../auth.js';
import type { AppDeps } from '../deps.js';

/** The quota as the API spells it. */
export interface QuotaJson {
  tenant: string;
  limits: {
    sandboxes: number;
    cpu: number;
    memory_mib: number;
    disk_mib: number;
    creates_per_second: number;
    create_burst: number;
    waits: number;
  };
  usage: { sandboxes: number; cpu: number; memory_mib: number; disk_mib: number; waits: number };
}

/** A tenant's limits and usage in the API's spelling. */
export function quotaToWire(
  tenant: string,
  limits: TenantLimits,
  usage: TenantUsage,
  waits: number,
): QuotaJson {
  return {
    tenant,
    limits: {
      sandboxes: limits.sandboxes,
      cpu: limits.cpu,
      memory_mib: limits.memoryMib,
      disk_mib: limits.diskMib,
      creates_per_second: limits.createsPerSecond,
      create_burst: limits.createBurst,
      waits: limits.waits,
    },
    usage: {
      sandboxes: usage.sandboxes,
      cpu: usage.cpu,
      memory_mib: usage.memoryMib,
      disk_mib: usage.diskMib,
      waits,
    },
  };
}

/** Handlers of the quota route. */
export function quotaHandlers(deps: AppDeps) {
  /** `GET /v1/quota`: the tenant's limits and usage. */
  const getQuota: RequestHandler = async (_req, res) => {
    const tenant = tenantOf(res);
    const usage = await deps.store.getTenantUsage(tenant);
    const waits = deps.admission?.waitsHeld(tenant) ?? 0;
    res.json(quotaToWire(tenant, limitsOf(deps.config.tenantLimits, tenant), usage, waits));
  };
  return { getQuota };
}
