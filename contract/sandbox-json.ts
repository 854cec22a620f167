/**
 * The Sandbox JSON: a sandbox as the API answers it (src/api/wire.ts, src/api/openapi.json `Sandbox`)
 * and as every webhook event carries it (`data`, src/activities/webhook-delivery.ts), snake_case, with its
 * resources in the API's spelling. Pure, so the API and the webhook activities share one shape.
 */
import type { Labels } from './labels.js';
import type { SandboxFailure, SandboxPodState, SandboxResources, SandboxState } from './sandbox.js';

/**
 * Resources as the API answers them: `cpu` in cores (a number, at most three decimals: `0.5`
 * for a request of `"500m"`), `memory_mib` and `disk_mib` in MiB. A request may spell `cpu` as
 * a Kubernetes quantity string; src/api/validation.ts reads it into cores.
 */
export interface WireResources {
  cpu: number;
  memory_mib: number;
  disk_mib: number;
}

/** Request resources -> the contract's. */
export function resourcesFromWire(wire: WireResources): SandboxResources {
  return { cpu: wire.cpu, memoryMib: wire.memory_mib, diskMib: wire.disk_mib };
}

/** The contract's resources -> the API's spelling. */
export function resourcesToWire(resources: SandboxResources): WireResources {
  return { cpu: resources.cpu, memory_mib: resources.memoryMib, disk_mib: resources.diskMib };
}

/**
 * What {@link sandboxToWire} reads of a sandbox: the shown fields of a stored sandbox
 * (src/store/types.ts `SandboxRecord`, which has these and the tenant, fencing and lifetime fields).
 */
export interface SandboxJsonSource {
  id: string;
  template: string;
  resources: SandboxResources;
  state: SandboxState;
  pod: SandboxPodState;
  failure: SandboxFailure | null;
  operationId: string;
  createdAt: string;
  updatedAt: string;
  expireTime: string | null;
  /** Absent on a record from before labels: none. */
  labels?: Labels;
}

/** A sandbox as the API shows it. Timestamps are ISO-8601 UTC. */
export interface SandboxJson {
  id: string;
  template: string;
  resources: WireResources;
  state: SandboxState;
  pod: SandboxPodState;
  failure: SandboxFailure | null;
  /** The operation that created the sandbox. */
  operation_id: string;
  created_at: string;
  updated_at: string;
  /**
   * When the sandbox is deleted for its lifetime (AIP-214; docs/api.md, "Lifetimes"), ISO-8601
   * UTC; null when it never expires or does not run yet.
   */
  expire_time: string | null;
  /** The caller's labels (docs/api.md, "Labels and filters"); {} for none. */
  labels: Record<string, string>;
}

/** Maps a stored sandbox to its API JSON (no tenant, no fencing fields). */
export function sandboxToWire(record: SandboxJsonSource): SandboxJson {
  return {
    id: record.id,
    template: record.template,
    resources: resourcesToWire(record.resources),
    state: record.state,
    pod: { ...record.pod },
    failure: record.failure ? { ...record.failure } : null,
    operation_id: record.operationId,
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    expire_time: record.expireTime,
    labels: { ...record.labels },
  };
}
