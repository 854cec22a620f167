/**
 * Warm pools (docs/architecture.md, "Warm pools"; docs/api.md, "Operator routes"): per template,
 * pods made ahead of any create with the resources the template's `warm_pool` names, so a create
 * asking for exactly those resources claims a running pod instead of making one. Types,
 * constants and pure functions only, so the workflow bundle may import it.
 */
import type { SandboxResources } from './sandbox.js';

/** The largest pool size a template or the scale route may ask for, in pods. */
export const MAX_WARM_POOL_SIZE = 500;

/** The `warmPool` workflow type: one per template with a pool. */
export const WARM_POOL_WORKFLOW = 'warmPool';

/** Signalled when a pool's size changed or one of its pods was claimed: reconcile now. */
export const WARM_POOL_CHANGED_SIGNAL = 'warmPoolChanged';

/**
 * How long a pool woken by {@link WARM_POOL_CHANGED_SIGNAL} waits for more claims before it
 * reconciles, in ms (src/workflows/warm-pool.ts); a worker sends a template's pool at most one
 * claim's signal per this long (src/activities/warm-pool-wakes.ts).
 */
export const WARM_POOL_COALESCE_MS = 250;

/**
 * The id of a template's pool workflow: `warm-pool/<task queue>/<template>`, so two
 * installations sharing a Temporal namespace (each its own task queue) run their own pools.
 */
export function warmPoolWorkflowId(taskQueue: string, template: string): string {
  return `warm-pool/${taskQueue}/${template}`;
}

/** Pods a pool has made but that are not ready yet, at most, unless `max_pending` says. */
export const DEFAULT_WARM_POOL_MAX_PENDING = 10;

/**
 * A template's pool as configured: how many ready pods, made with which resources, and how many
 * it may have starting at once (`maxPending`: its own bound on pods being made).
 */
export interface WarmPoolSpec {
  size: number;
  resources: SandboxResources;
  maxPending: number;
}

/** Whether a create's resources are those a pool's pods are made with (equal, field by field). */
export function matchesWarmPool(resources: SandboxResources, pool: WarmPoolSpec): boolean {
  return (
    resources.cpu === pool.resources.cpu &&
    resources.memoryMib === pool.resources.memoryMib &&
    resources.diskMib === pool.resources.diskMib
  );
}

/**
 * What one reconcile of a pool saw and did. `desired`: the size asked for (the scale route's,
 * else the template's); `ready`: pods with an IP nobody has claimed; `pending`: pods made but not
 * ready yet. `backOff`: set while the pool makes no pods because they keep failing, with why
 * (a node's decisive refusal of the image, or failures in a row) and until when.
 */
export interface WarmPoolStatus {
  template: string;
  image: string;
  desired: number;
  ready: number;
  pending: number;
  /** Pods this reconcile made and deleted. */
  made: number;
  deleted: number;
  backOff?: { reason: string; untilMs: number };
}

/** How a pool backs off after pods that fail in a row: first delay and cap, in ms. */
export const WARM_POOL_BACKOFF = { initialMs: 5_000, maxMs: 300_000 } as const;

/** The back-off delay after `failures` failed reconciles in a row (>= 1), in ms. */
export function warmPoolBackoffMs(failures: number): number {
  const exponent = Math.min(Math.max(failures, 1) - 1, 20);
  return Math.min(WARM_POOL_BACKOFF.initialMs * 2 ** exponent, WARM_POOL_BACKOFF.maxMs);
}
