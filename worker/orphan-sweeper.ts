/**
 * The orphan-pod sweeper: the last line of the "no leaked pods" promise. A create's compensation
 * deletes its pod, but a pod whose creation the apiserver commits only after the create gave up
 * (a request stuck in a slow apiserver past the step's timeout) appears when nobody will delete
 * it. Every ORPHAN_SWEEP_INTERVAL_MS the worker lists the pods it manages and deletes those
 * whose sandbox the store knows as `failed` or `deleted`, or at a newer generation.
 *
 * A list on a timer, outside any create: the readiness wait itself never polls.
 */
import { Counter } from 'prom-client';
import { workerRegistry } from '../activities/metrics.js';
import type { Logger } from 'pino';
import type { KubernetesClient } from '../kubernetes/client.js';
import { deletePod, listSandboxPods, type SandboxPod } from '../kubernetes/pods.js';
import type { SandboxRecord, Store } from '../store/index.js';

/** Pods younger than this (ms) are never swept: their create may still be recording them. */
export const ORPHAN_GRACE_MS = 120_000;

/** Dependencies of the sweeper. */
export interface OrphanSweepDeps {
  kubernetes: KubernetesClient;
  store: Store;
  logger: Logger;
  /** Minimum pod age in ms (default {@link ORPHAN_GRACE_MS}). */
  graceMs?: number;
  /** The clock, for tests (default Date.now). */
  now?: () => number;
}

let orphansDeleted: Counter | undefined;

/**
 * Why a pod is an orphan, or undefined when it is not. A pod whose sandbox the store does not
 * know is left alone: it may belong to another installation sharing the namespace.
 */
export function orphanReason(
  pod: SandboxPod,
  sandbox: SandboxRecord | undefined,
): string | undefined {
  if (!sandbox) return undefined;
  if (sandbox.state === 'failed' || sandbox.state === 'deleted') return `sandbox ${sandbox.state}`;
  if (pod.generation < sandbox.generation) return `sandbox at generation ${sandbox.generation}`;
  return undefined;
}

/**
 * One sweep: lists the managed pods and deletes the orphans (uid precondition, so a newer pod
 * of the same name survives). Pods already terminating are skipped; a pod whose lookup or delete
 * fails is logged and skipped, so it cannot block the others.
 * @returns how many pods were checked and the names of those deleted
 * @throws the client's error when the list fails (the next sweep tries again)
 */
export async function sweepOrphanPods(
  deps: OrphanSweepDeps,
): Promise<{ checked: number; deleted: string[] }> {
  const now = deps.now?.() ?? Date.now();
  const graceMs = deps.graceMs ?? ORPHAN_GRACE_MS;
  const pods = await listSandboxPods(deps.kubernetes);
  const deleted: string[] = [];
  for (const pod of pods) {
    if (pod.terminating || !pod.createdAt || now - pod.createdAt.getTime() < graceMs) continue;
    // One pod that cannot be looked up or deleted must not keep the others from being swept.
    try {
      const reason = orphanReason(pod, await deps.store.getSandboxById(pod.sandboxId));
      if (!reason) continue;
      if ((await deletePod(deps.kubernetes, pod)) !== 'deleted') continue;
      deleted.push(pod.name);
      orphansDeleted ??= new Counter({
        name: 'durable_sandbox_orphan_pods_deleted_total',
        help: 'Pods the orphan sweeper deleted because their sandbox had failed or was deleted',
        registers: [workerRegistry],
      });
      orphansDeleted.inc();
      deps.logger.warn(
        { sandbox_id: pod.sandboxId, pod_name: pod.name, pod_uid: pod.uid, reason },
        'orphan pod deleted',
      );
    } catch (err) {
      deps.logger.warn(
        { err, sandbox_id: pod.sandboxId, pod_name: pod.name, pod_uid: pod.uid },
        'orphan pod sweep of this pod failed; the next sweep tries again',
      );
    }
  }
  return { checked: pods.length, deleted };
}

/**
 * Runs {@link sweepOrphanPods} every `intervalMs`; errors are logged and the next sweep retries.
 * @returns a function that stops the sweeper
 */
export function startOrphanSweeper(deps: OrphanSweepDeps & { intervalMs: number }): () => void {
  let running = false;
  const timer = setInterval(() => {
    if (running) return;
    running = true;
    sweepOrphanPods(deps)
      .catch((err: unknown) => deps.logger.warn({ err }, 'orphan pod sweep failed'))
      .finally(() => (running = false));
  }, deps.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
