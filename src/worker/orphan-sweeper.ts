/**
 * The orphan-pod sweeper: the last line of the "no leaked pods" promise. A create's compensation
 * deletes its pod, but a pod whose creation the apiserver commits only after the create gave up
 * (a request stuck in a slow apiserver past the step's timeout) appears when nobody will delete
 * it. Every ORPHAN_SWEEP_INTERVAL_MS the worker lists the pods it manages and deletes those
 * whose sandbox the store knows as `failed` or `deleted`, or at a newer generation, or at an
 * earlier placement than the pod the store records (re-placement), or stuck `creating` while
 * its create workflow is closed (one visibility list a sweep, and a describe only to confirm
 * an absence: Temporal requests independent of how many creates wait). The same sweep marks a
 * `running` sandbox whose pod is gone (or being deleted) `lost`, with when and why, instead of
 * listing it as running with a dead IP.
 *
 * A list on a timer, outside any create: the readiness wait itself never polls.
 */
import { Counter } from 'prom-client';
import { workerRegistry } from '../activities/metrics.js';
import type { Logger } from 'pino';
import { classifyApiserverError } from '../kubernetes/apiserver-errors.js';
import type { KubernetesClient } from '../kubernetes/client.js';
import { deletePod, listManagedPods, type SandboxPod } from '../kubernetes/pods.js';
import type { TemplateConfig } from '../config/index.js';
import { deletePoolPod } from '../kubernetes/warm-pods.js';
import { placementOfPodName } from '../kubernetes/pod-spec.js';
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
  /**
   * Whether a create workflow (by operation id) is still open (src/temporal/workflow-status.ts).
   * Unset: sandboxes stuck `creating` are not swept.
   */
  isWorkflowOpen?: (workflowId: string) => Promise<boolean>;
  /**
   * The ids of the create workflows running now, from one paged visibility query
   * (src/temporal/workflow-status.ts `listRunningWorkflowIds`). Asked at most once a sweep, and
   * only when a sweep meets a pod stuck `creating`; a workflow in it is open without asking
   * {@link isWorkflowOpen}, which then confirms only the absent ones. Unset: every such pod is
   * asked of `isWorkflowOpen`.
   */
  listRunningCreates?: () => Promise<ReadonlySet<string>>;
  /** `running` sandboxes read per store query (default {@link LOST_CHECK_PAGE_SIZE}). */
  lostCheckPageSize?: number;
  /**
   * The worker's catalog: an unclaimed warm pool pod this installation made (store `warm_pods`)
   * of a template it gives no `warm_pool` (the template or its pool was dropped) is an orphan.
   * Unset: pool pods are left alone.
   */
  templates?: Record<string, TemplateConfig>;
  /**
   * Hands a sandbox just marked lost (its `sandbox.lost` event is in the store) to its tenant's
   * webhook endpoints (src/activities/webhook-delivery.ts `announceLostEvent`). Unset: the event is only in
   * the feed. A failure is logged; the event stays in the feed.
   */
  announceLost?: (sandbox: SandboxRecord) => Promise<unknown>;
}

/**
 * `running` sandboxes read per page when a sweep checks them for a lost pod; a sweep pages
 * through every one of them.
 */
export const LOST_CHECK_PAGE_SIZE = 1_000;

let orphansDeleted: Counter | undefined;

function countOrphan(): void {
  orphansDeleted ??= new Counter({
    name: 'durable_sandbox_orphan_pods_deleted_total',
    help: 'Pods the orphan sweeper deleted: their sandbox had failed or was deleted, or their warm pool was dropped',
    registers: [workerRegistry],
  });
  orphansDeleted.inc();
}

/**
 * Why a pod is an orphan, or undefined when it is not. A pod whose sandbox the store does not
 * know is left alone: it may belong to another installation sharing the namespace.
 * @param workflowOpen whether the sandbox's create workflow is open; asked only for a sandbox
 *   `creating` at the pod's generation
 */
export async function orphanReason(
  pod: SandboxPod,
  sandbox: SandboxRecord | undefined,
  workflowOpen?: (workflowId: string) => Promise<boolean>,
): Promise<string | undefined> {
  if (!sandbox) return undefined;
  if (sandbox.state === 'failed' || sandbox.state === 'deleted') return `sandbox ${sandbox.state}`;
  if (pod.generation < sandbox.generation) return `sandbox at generation ${sandbox.generation}`;
  const replacedBy = laterPlacement(pod, sandbox);
  if (replacedBy) return `placement ${pod.placement} was replaced by ${replacedBy}`;
  if (sandbox.state === 'creating' && workflowOpen && !(await workflowOpen(sandbox.operationId))) {
    return `sandbox creating but its create workflow ${sandbox.operationId} is closed`;
  }
  return undefined;
}

/**
 * The later placement that replaced `pod`, when the store records a pod of the same generation
 * whose placement is later than `pod`'s (docs/architecture.md, "Re-placement": the create moved
 * past `pod`'s placement, so nothing will use it; its own delete was missed, e.g. the worker died
 * around it). A later placement than the recorded one is left alone: its create may be about to
 * record it.
 * @returns e.g. `placement 2 (pod sbx-…-g1-p2)`, or undefined
 */
function laterPlacement(pod: SandboxPod, sandbox: SandboxRecord): string | undefined {
  const recorded = sandbox.pod;
  if (pod.generation !== sandbox.generation || !recorded.name || recorded.uid === pod.uid) {
    return undefined;
  }
  const current = placementOfPodName(recorded.name, sandbox.id, sandbox.generation);
  if (current === undefined || !(pod.placement < current)) return undefined;
  return `placement ${current} (pod ${recorded.name})`;
}

/**
 * One sweep: lists the managed pods and deletes the orphans (uid precondition, so a newer pod
 * of the same name survives). Pods already terminating are skipped; a pod whose lookup or delete
 * fails is logged and skipped, so it cannot block the others.
 * Then marks `lost` the sandboxes that were `running` before the list began but whose pod is
 * not in it (or is being deleted): their pod existed before the list, so its absence is a
 * deletion, not a race with a create.
 * @returns how many pods were checked, the names of those deleted, the ids of sandboxes lost
 * @throws the client's error when the list fails (the next sweep tries again)
 */
export async function sweepOrphanPods(
  deps: OrphanSweepDeps,
): Promise<{ checked: number; deleted: string[]; lost: string[] }> {
  const now = deps.now?.() ?? Date.now();
  const graceMs = deps.graceMs ?? ORPHAN_GRACE_MS;
  // Wall-clock, like the store's updated_at: only sandboxes running before the list began.
  const updatedBefore = new Date().toISOString();
  const { sandboxPods: pods, poolPods } = await listManagedPods(deps.kubernetes);
  const deleted: string[] = [];
  const madeBy = new Map<string, Map<string, string>>();
  for (const pod of poolPods) {
    if (pod.terminating || !pod.createdAt || now - pod.createdAt.getTime() < graceMs) continue;
    if (!deps.templates || deps.templates[pod.template]?.warm_pool) continue;
    try {
      // Only a pod this installation made (store `warm_pods`); another's is left alone.
      if (!madeBy.has(pod.template)) {
        madeBy.set(pod.template, await deps.store.warmPools.madePods(pod.template));
      }
      if (!madeBy.get(pod.template)?.has(pod.uid)) continue;
      if ((await deletePoolPod(deps.kubernetes, pod)) !== 'deleted') continue;
      deleted.push(pod.name);
      countOrphan();
      deps.logger.warn(
        { template: pod.template, pod_name: pod.name, pod_uid: pod.uid },
        'orphan warm pool pod deleted: the catalog pools its template no more',
      );
    } catch (err) {
      deps.logger.warn({ err, pod_name: pod.name }, 'orphan warm pod sweep failed; next sweep');
    }
  }
  const workflowOpen = workflowOpenThisSweep(deps);
  for (const pod of pods) {
    if (pod.terminating || !pod.createdAt || now - pod.createdAt.getTime() < graceMs) continue;
    // One pod that cannot be looked up or deleted must not keep the others from being swept.
    try {
      const sandbox = await deps.store.getSandboxById(pod.sandboxId);
      const reason = await orphanReason(pod, sandbox, workflowOpen);
      if (!reason) continue;
      if ((await deletePod(deps.kubernetes, pod)) !== 'deleted') continue;
      deleted.push(pod.name);
      countOrphan();
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
  const lost = await markLostSandboxes(deps, updatedBefore, pods);
  return { checked: pods.length, deleted, lost };
}

/**
 * The sweep's question "is this create workflow open?", at a cost independent of how many
 * creates wait: the first ask lists the running creates (`listRunningCreates`); a workflow in
 * that list is open; one absent from it is confirmed with `isWorkflowOpen` (one describe),
 * since visibility lags: only a create started moments ago, or one that has closed, is absent.
 * One closed but still listed as running is left for a later sweep. When the list fails the
 * sweep leaves every `creating` sandbox alone (logged once) rather than describe each.
 * @returns undefined when `isWorkflowOpen` is unset (`creating` sandboxes are not swept)
 */
function workflowOpenThisSweep(
  deps: OrphanSweepDeps,
): ((workflowId: string) => Promise<boolean>) | undefined {
  const { isWorkflowOpen, listRunningCreates } = deps;
  if (!isWorkflowOpen || !listRunningCreates) return isWorkflowOpen;
  let running: Promise<ReadonlySet<string> | undefined> | undefined;
  return async (workflowId) => {
    running ??= listRunningCreates().catch((err: unknown) => {
      deps.logger.warn(
        { err },
        'listing the running create workflows failed; creating sandboxes are left to the next sweep',
      );
      return undefined;
    });
    const ids = await running;
    if (!ids || ids.has(workflowId)) return true;
    return isWorkflowOpen(workflowId);
  };
}

let sandboxesLost: Counter | undefined;

/**
 * Marks `lost` each sandbox `running` since before `updatedBefore` (ISO-8601, taken before the
 * pod list) whose pod is absent from `pods` or being deleted, reading them page by page; a
 * sandbox that moved on meanwhile is left alone (Store.markSandboxLost is fenced by the pod's
 * uid).
 * @returns the ids marked
 */
async function markLostSandboxes(
  deps: OrphanSweepDeps,
  updatedBefore: string,
  pods: SandboxPod[],
): Promise<string[]> {
  const byUid = new Map(pods.map((pod) => [pod.uid, pod]));
  const lost: string[] = [];
  const limit = deps.lostCheckPageSize ?? LOST_CHECK_PAGE_SIZE;
  let after: { updatedAt: string; id: string } | undefined;
  for (;;) {
    const page = await deps.store.listRunningSandboxes({ updatedBefore, limit, after });
    lost.push(...(await markLostOf(deps, page, byUid)));
    const last = page[page.length - 1];
    if (page.length < limit || !last) return lost;
    after = { updatedAt: last.updatedAt, id: last.id };
  }
}

/** {@link markLostSandboxes} for one page of `running` sandboxes. */
async function markLostOf(
  deps: OrphanSweepDeps,
  running: SandboxRecord[],
  byUid: Map<string, SandboxPod>,
): Promise<string[]> {
  const lost: string[] = [];
  for (const sandbox of running) {
    const { name, uid } = sandbox.pod;
    if (!uid) continue;
    const pod = byUid.get(uid);
    if (pod && !pod.terminating) continue;
    const reason = pod
      ? `its pod ${name} (uid ${uid}) is being deleted`
      : `its pod ${name} (uid ${uid}) is gone`;
    try {
      if (!(await deps.store.markSandboxLost({ sandboxId: sandbox.id, podUid: uid, reason }))) {
        continue;
      }
    } catch (err) {
      deps.logger.warn({ err, sandbox_id: sandbox.id }, 'marking a sandbox lost failed');
      continue;
    }
    lost.push(sandbox.id);
    await deps.announceLost?.(sandbox).catch((err: unknown) => {
      deps.logger.warn(
        { err, sandbox_id: sandbox.id },
        'announcing a lost sandbox to webhooks failed',
      );
    });
    sandboxesLost ??= new Counter({
      name: 'durable_sandbox_sandboxes_lost_total',
      help: 'Running sandboxes the sweep marked lost because their pod was gone',
      registers: [workerRegistry],
    });
    sandboxesLost.inc();
    deps.logger.warn(
      { sandbox_id: sandbox.id, pod_name: name, pod_uid: uid, reason },
      'running sandbox lost its pod',
    );
  }
  return lost;
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
      .catch((err: unknown) => {
        const answer = classifyApiserverError(err);
        deps.logger.warn(
          { err, error_class: answer.kind, status: answer.status, reason: answer.message },
          'orphan pod sweep failed; the next sweep tries again',
        );
      })
      .finally(() => (running = false));
  }, deps.intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
