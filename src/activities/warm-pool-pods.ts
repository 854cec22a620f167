/**
 * The warm pools' activities (docs/architecture.md, "Warm pools"): a create's claim of a ready
 * pod, and a pool's reconcile (list its pods, delete what must go, make what is missing, record
 * its status). The worker's catalog decides every pod's image, resources and settings and
 * whether a create may claim at all; the workflow's input only asks.
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { floorBoundOf } from '../verdict/refusal-bounds.js';
import {
  OPERATION_ERRORS,
  RESOURCE_LIMITS,
  WARM_POOL_CHANGED_SIGNAL,
  matchesWarmPool,
  warmPoolWorkflowId,
  type SandboxResources,
  type WarmPoolStatus,
} from '../../contract/index.js';
import { placementPolicyOf, warmPoolOf, type TemplateConfig } from '../config/index.js';
import { podSettingsOf } from '../config/pod-settings.js';
import type { PodRef } from '../kubernetes/pods.js';
import { isSandboxFailureOf, parseRefusal, parseRootfsFloor } from '../verdict/refusal.js';
import {
  claimWarmPod,
  createWarmPod,
  findClaimedPod,
  isReady,
  listSandboxFailureEvents,
  listWarmPodObjects,
  listWarmPods,
  deletePoolPod,
  readyWarmPodsInRandomOrder,
  warmPodFingerprint,
  warmPodsOf,
  type WarmPod,
  type WarmPodClaim,
  type WarmPodInput,
} from '../kubernetes/warm-pods.js';
import type { KubernetesClient } from '../kubernetes/client.js';
import type { WarmPodInformer } from '../kubernetes/warm-pod-informer.js';
import type { CreateMetrics } from './metrics.js';
import { storeActivities } from './store.js';
import type { Store } from '../store/index.js';
import {
  PLAN_DEFAULTS,
  planReconcile,
  type PlanHistory,
  type PlannedPod,
  type PodRefusal,
} from './warm-pool-plan.js';
import { warmPoolMetrics } from './warm-pool-metrics.js';
import { PoolWakeups } from './warm-pool-wakes.js';

/** Dependencies of the pool activities (a subset of the pod activities'). */
export interface WarmPoolActivityDeps {
  kubernetes: KubernetesClient;
  store: Store;
  templates: Record<string, TemplateConfig>;
  /**
   * The worker's informer of pool pods (src/kubernetes/warm-pod-informer.ts), started when its
   * catalog has a pool: claims pick from its cache. Unset or not synced: claims list the pool.
   */
  warmPods?: WarmPodInformer;
  /** Create metrics (src/activities/metrics.ts); optional. */
  metrics?: CreateMetrics;
}

/** Input of `claimWarmPod`: the create's execution, template and resources. */
export interface ClaimWarmPodInput {
  operationId: string;
  sandboxId: string;
  generation: number;
  attempt: number;
  template: string;
  resources: SandboxResources;
}

/**
 * A claimed pod: its ref, its IP and the image it runs, and whether the sandbox was marked
 * running with it (false: the execution was retired or superseded meanwhile; nothing written).
 */
export interface ClaimedWarmPod {
  pod: PodRef & { image: string };
  podIp: string;
  marked: boolean;
}

/** Input of `reconcileWarmPool`: the template and the pool's memory (its workflow's). */
export interface ReconcileWarmPoolInput {
  template: string;
  history: PlanHistory;
}

/** Result of `reconcileWarmPool`. `waitMs`: when the pool should look again, at the latest. */
export interface ReconcileWarmPoolResult {
  status: WarmPoolStatus;
  history: PlanHistory;
  waitMs: number;
  /** True when the template has no pool and none of its pods is left: the workflow may end. */
  ended: boolean;
}

/** How long a pool at rest waits before it looks again (ms), and while pods start. */
export const WARM_POOL_RESYNC_MS = { rest: 60_000, starting: 1_000 } as const;

/** Candidates a claim tries before it goes cold (each lost race is one 409). */
const CLAIM_TRIES = 8;

/** How long an attempt keeps trying candidates, in ms: well inside the step's 30 s timeout. */
const CLAIM_BUDGET_MS = 10_000;

/** What the pool's pods are made from: the catalog's image, resources and pod settings. */
function poolPodInput(
  name: string,
  template: TemplateConfig,
  resources: SandboxResources,
): WarmPodInput {
  return { template: name, image: template.image, resources, settings: podSettingsOf(template) };
}

/**
 * How old a made pod's row must be before a reconcile that does not list the pod forgets it, in
 * ms: longer than a claim's retries (so a retried claim still finds its pod ours) and than the
 * informer's lag.
 */
const FORGET_AFTER_MS = 600_000;

/** Uids seen ready once, so each warm pod's ready latency is observed once (bounded). */
const seenReady = new Set<string>();

/** Builds the pool activities over their dependencies. */
export function warmPoolActivities(deps: WarmPoolActivityDeps) {
  const { markSandboxRunning } = storeActivities(deps);
  // One per worker: its claims' signals to each pool, at most one per window.
  const wakeups = new PoolWakeups();
  return {
    /** Claims a ready warm pod for a create's sandbox: {@link claimWarmPodStep}. */
    claimWarmPod: (input: ClaimWarmPodInput) =>
      claimWarmPodStep(deps, markSandboxRunning, input, wakeups),
    /** One reconcile of a template's pool: {@link reconcileWarmPoolStep}. */
    reconcileWarmPool: (input: ReconcileWarmPoolInput) => reconcileWarmPoolStep(deps, input),
  };
}

/**
 * Claims a ready warm pod of the create's template for its sandbox (src/kubernetes/warm-pods.ts
 * `claimWarmPod`: one update under the pod's resourceVersion, so each pod goes to one
 * create), records it on the sandbox and marks the sandbox running with its IP (one fenced
 * transaction: `markSandboxRunning` with its `pod`, whose webhook event and lifetime follow), and
 * tells the pool to refill. A retry after a claim whose answer was lost finds the pod by its
 * sandbox id label.
 * @returns the pod and its IP, or null when the worker's catalog gives the template no pool,
 *   the resources are not the pool's, or no ready pod is left (the create goes cold)
 * @param markSandboxRunning the store activity (src/activities/store.ts) the claim marks with
 * @param wakeups the worker's signals to its pools (src/activities/warm-pool-wakes.ts)
 * @throws the client's or the store's error (Temporal retries the step)
 */
export async function claimWarmPodStep(
  deps: WarmPoolActivityDeps,
  markSandboxRunning: ReturnType<typeof storeActivities>['markSandboxRunning'],
  input: ClaimWarmPodInput,
  wakeups: PoolWakeups,
): Promise<ClaimedWarmPod | null> {
  const template = Object.hasOwn(deps.templates, input.template)
    ? deps.templates[input.template]
    : undefined;
  const pool = template ? warmPoolOf(template) : undefined;
  if (!template || !pool || !matchesWarmPool(input.resources, pool)) return null;
  const claim = {
    sandboxId: input.sandboxId,
    // The store's tenant, as the pod activities' (src/activities/pods.ts).
    tenant: (await deps.store.getSandboxById(input.sandboxId))?.tenant,
    generation: input.generation,
    template: input.template,
  };
  // Only a retry can find its pod claimed already (the first attempt's answer was lost).
  let claimed =
    Context.current().info.attempt > 1 ? await findClaimedPod(deps.kubernetes, claim) : undefined;
  // A pod claimed earlier that lost its IP since is not one to run on: its create fails
  // (compensation deletes it) rather than mark the sandbox running without an address.
  if (claimed && !claimed.podIp) {
    throw ApplicationFailure.nonRetryable(
      `the warm pod ${claimed.name} claimed for this sandbox has no IP any more`,
      OPERATION_ERRORS.pod_failed.failureType,
    );
  }
  if (!claimed) {
    claimed = await claimReadyPod(deps, input, template, pool.resources, claim, wakeups);
    if (!claimed) return null;
  }
  log.info('warm pod claimed', { pod_name: claimed.name, pod_uid: claimed.uid });
  // Recorded and marked running in one transaction: a claimed pod has its IP already.
  const marked = await markSandboxRunning({
    operationId: input.operationId,
    sandboxId: input.sandboxId,
    generation: input.generation,
    attempt: input.attempt,
    podUid: claimed.uid,
    podIp: claimed.podIp,
    pod: { name: claimed.name, uid: claimed.uid, createPath: 'warm' },
  });
  return {
    marked,
    pod: {
      name: claimed.name,
      uid: claimed.uid,
      resourceVersion: claimed.resourceVersion,
      image: template.image,
    },
    podIp: claimed.podIp,
  };
}

/**
 * Tries up to {@link CLAIM_TRIES} ready pods of the pool, in random order, within
 * {@link CLAIM_BUDGET_MS}; counts the claim, and tells the pool to refill when one was claimed
 * (at most one signal per pool and window: src/activities/warm-pool-wakes.ts).
 * @returns the claimed pod, or undefined when none was left (the create goes cold)
 */
async function claimReadyPod(
  deps: WarmPoolActivityDeps,
  input: ClaimWarmPodInput,
  template: TemplateConfig,
  resources: SandboxResources,
  claim: WarmPodClaim,
  wakeups: PoolWakeups,
): Promise<(PodRef & { podIp: string }) | undefined> {
  const metrics = warmPoolMetrics();
  let claimed: (PodRef & { podIp: string }) | undefined;
  // Only pods this installation made, from what the catalog says now (store `warm_pods`):
  // a pod someone else labelled as the pool's is never handed to a tenant.
  const fingerprint = warmPodFingerprint(poolPodInput(input.template, template, resources));
  const objects =
    deps.warmPods?.cached() ?? (await listWarmPodObjects(deps.kubernetes, input.template));
  // Drawn one at a time: only the pods tried are read (src/kubernetes/warm-pods.ts).
  const candidates = readyWarmPodsInRandomOrder(objects, input.template);
  const startedAtMs = Date.now();
  let tries = 0;
  for (const pod of candidates.draws) {
    // An attempt past its time stops claiming: a retry must not find a second pod claimed.
    if (tries >= CLAIM_TRIES || Date.now() - startedAtMs > CLAIM_BUDGET_MS) break;
    // One indexed read per candidate, in the random order: never the whole pool.
    if ((await deps.store.warmPools.fingerprintOf(pod.uid)) !== fingerprint) continue;
    tries += 1;
    claimed = await claimWarmPod(deps.kubernetes, pod, claim);
    if (claimed) break;
  }
  if (!claimed) {
    metrics.claims.inc({ template: input.template, outcome: 'empty' });
    log.info('warm pool had no ready pod; the create goes cold', {
      template: input.template,
      candidates: candidates.ready,
    });
    return undefined;
  }
  metrics.claims.inc({ template: input.template, outcome: 'claimed' });
  await deps.store.warmPools.recordClaim(input.template);
  // Not awaited: the refill must not hold the create back (a lost signal is the next
  // resync's).
  void signalPool(input.template, wakeups);
  return claimed;
}

/**
 * One reconcile of a template's pool (src/activities/warm-pool-plan.ts has the rules): lists its
 * pods and the kubelet refusals, deletes (uid precondition) what must go, learns the floor a
 * decisive refusal states, makes what is missing, records the status in the store and the
 * metrics.
 * @throws the client's or the store's error (Temporal retries the step)
 */
export async function reconcileWarmPoolStep(
  deps: WarmPoolActivityDeps,
  input: ReconcileWarmPoolInput,
): Promise<ReconcileWarmPoolResult> {
  const nowMs = Date.now();
  const template = Object.hasOwn(deps.templates, input.template)
    ? deps.templates[input.template]
    : undefined;
  const pool = template ? warmPoolOf(template) : undefined;
  const record = await deps.store.warmPools.get(input.template);
  const desired = pool ? (record?.size ?? pool.size) : 0;
  const cached = deps.warmPods?.cached();
  const listedPods = cached
    ? warmPodsOf(cached, input.template)
    : await listWarmPods(deps.kubernetes, input.template);
  const made = await deps.store.warmPools.madePods(input.template);
  // Pods this installation did not make are no concern of its pool: not counted, not
  // claimed, not deleted (another installation's, or planted).
  const pods = listedPods.filter((pod) => made.has(pod.uid));
  if (!template || !pool) {
    // No pool in the catalog (any more): every pod it made goes.
    for (const pod of pods) if (!pod.terminating) await deletePoolPod(deps.kubernetes, pod);
    return {
      status: emptyStatus(input.template, template?.image ?? ''),
      history: { failures: 0, backOffUntilMs: 0 },
      waitMs: WARM_POOL_RESYNC_MS.rest,
      ended: pods.every((pod) => pod.terminating),
    };
  }
  const makeInput = poolPodInput(input.template, template, pool.resources);
  const fingerprint = warmPodFingerprint(makeInput);
  const plan = await planPool(deps, input, template, pool, {
    pods,
    made,
    desired,
    fingerprint,
    nowMs,
  });
  const { deleted, madeNames } = await applyPlan(deps, input.template, template, plan, {
    pods,
    makeInput,
    fingerprint,
    nowMs,
  });
  // Rows of pods claimed or deleted since, once old enough that the cache has shown them.
  await deps.store.warmPools.forgetMadePods(
    input.template,
    listedPods.map((pod) => pod.uid),
    new Date(nowMs - FORGET_AFTER_MS).toISOString(),
  );
  // The next reconcile reads the cache: let it hold what was just made.
  if (cached && madeNames.length > 0) await deps.warmPods?.sawCreated(madeNames);
  observeReadyPods(pods, input.template, nowMs);
  const status = await recordPoolStatus(deps, input.template, template.image, plan, {
    desired,
    deleted,
    made: madeNames.length,
    nowMs,
  });
  return {
    status,
    history: plan.history,
    waitMs: waitOf(status, nowMs),
    ended: false,
  };
}

/** What {@link planPool} plans from: the pool's own pods and the pool's settings now. */
interface PoolSnapshot {
  pods: WarmPod[];
  made: Awaited<ReturnType<Store['warmPools']['madePods']>>;
  desired: number;
  fingerprint: string;
  nowMs: number;
}

/**
 * The reconcile's plan (src/activities/warm-pool-plan.ts): each pod with its refusal (the kubelet's
 * events, read only while pods are pending) and the image's rootfs floor.
 */
async function planPool(
  deps: WarmPoolActivityDeps,
  input: ReconcileWarmPoolInput,
  template: TemplateConfig,
  pool: NonNullable<ReturnType<typeof warmPoolOf>>,
  snapshot: PoolSnapshot,
): Promise<ReturnType<typeof planReconcile>> {
  const { pods, made, desired, fingerprint, nowMs } = snapshot;
  const pending = pods.filter((pod) => !pod.terminating && !isReady(pod));
  const events = pending.length > 0 ? await listSandboxFailureEvents(deps.kubernetes) : [];
  const floors = await deps.store.listRootfsFloors([template.image]);
  const floorMib = template.rootfs_mib ?? floors[0]?.rootfsMib;
  const planned: PlannedPod[] = pods.map((pod) => ({
    uid: pod.uid,
    name: pod.name,
    madeAsPool: made.get(pod.uid) === fingerprint,
    ready: isReady(pod),
    phase: pod.phase,
    terminating: pod.terminating,
    createdAtMs: pod.createdAtMs,
    refusal: refusalOf(pod, events, floorBoundOf(deps.templates, input.template).mib),
  }));
  return planReconcile(
    planned,
    {
      resources: pool.resources,
      desired,
      replaceOn: placementPolicyOf(template)?.replaceOn ?? [],
      floorMib,
    },
    input.history,
    nowMs,
    { ...PLAN_DEFAULTS, makingAtOnce: pool.maxPending },
  );
}

/**
 * Carries out a plan: learns the floors it found, deletes (uid precondition) the pods it dooms,
 * makes the pods it lacks and records each before anything counts it.
 * @returns how many pods were deleted, and the names of the pods made
 */
async function applyPlan(
  deps: WarmPoolActivityDeps,
  templateName: string,
  template: TemplateConfig,
  plan: ReturnType<typeof planReconcile>,
  work: { pods: WarmPod[]; makeInput: WarmPodInput; fingerprint: string; nowMs: number },
): Promise<{ deleted: number; madeNames: string[] }> {
  const { pods, makeInput, fingerprint, nowMs } = work;
  const metrics = warmPoolMetrics();
  for (const floor of plan.floors) {
    await learnFloor(deps.store, templateName, template, floor, nowMs);
  }
  let deleted = 0;
  const byUid = new Map(pods.map((pod) => [pod.uid, pod]));
  for (const doomed of plan.deletes) {
    const pod = byUid.get(doomed.uid);
    if (!pod) continue;
    // Under the resourceVersion read: a pod claimed since is not deleted.
    const outcome = await deletePoolPod(deps.kubernetes, pod);
    if (outcome === 'deleted') deleted += 1;
    if (doomed.reason !== 'stale' && doomed.reason !== 'surplus') {
      metrics.podFailures.inc({ template: templateName, reason: doomed.reason });
      log.warn('warm pod failed; deleted', { template: templateName, detail: doomed.detail });
    }
  }
  const madeNames: string[] = [];
  for (let i = 0; i < plan.make; i += 1) {
    const pod = await createWarmPod(deps.kubernetes, makeInput);
    // Recorded before anything counts it: a pod made but not recorded (a crash between
    // the two) is no pool's, and is left to an operator, never handed out.
    await deps.store.warmPools.recordMadePod({
      uid: pod.uid,
      template: templateName,
      name: pod.name,
      fingerprint,
    });
    madeNames.push(pod.name);
  }
  return { deleted, madeNames };
}

/** Observes each pool pod's ready latency once (`seenReady`). */
function observeReadyPods(pods: WarmPod[], template: string, nowMs: number): void {
  const metrics = warmPoolMetrics();
  for (const pod of pods) {
    if (!isReady(pod) || seenReady.has(pod.uid)) continue;
    if (seenReady.size > 10_000) seenReady.clear();
    seenReady.add(pod.uid);
    if (pod.createdAtMs !== undefined) {
      // creationTimestamp has 1 s resolution: the figure is good to a second.
      const seconds = Math.max(0, (nowMs - pod.createdAtMs) / 1000);
      metrics.podReadySeconds.observe({ template }, seconds);
    }
  }
}

/** Builds the pool's status from the plan, records it in the store and sets the pool's gauges. */
async function recordPoolStatus(
  deps: WarmPoolActivityDeps,
  templateName: string,
  image: string,
  plan: ReturnType<typeof planReconcile>,
  counts: { desired: number; deleted: number; made: number; nowMs: number },
): Promise<WarmPoolStatus> {
  const { desired, deleted, nowMs } = counts;
  const metrics = warmPoolMetrics();
  const backOffReason =
    plan.blocked ?? (nowMs < plan.history.backOffUntilMs ? plan.history.reason : undefined);
  const status: WarmPoolStatus = {
    template: templateName,
    image,
    desired,
    ready: plan.ready,
    pending: plan.pending + counts.made,
    made: counts.made,
    deleted,
    ...(backOffReason
      ? {
          backOff: {
            reason: backOffReason,
            untilMs: plan.blocked ? nowMs + WARM_POOL_RESYNC_MS.rest : plan.history.backOffUntilMs,
          },
        }
      : {}),
  };
  await deps.store.warmPools.recordStatus(status);
  metrics.desired.set({ template: templateName }, desired);
  metrics.pods.set({ template: templateName, state: 'ready' }, status.ready);
  metrics.pods.set({ template: templateName, state: 'pending' }, status.pending);
  metrics.backingOff.set({ template: templateName }, backOffReason ? 1 : 0);
  return status;
}

/** When the pool looks again: soon while pods start, at the back-off's end, else at rest. */
function waitOf(status: WarmPoolStatus, nowMs: number): number {
  if (status.backOff) {
    return Math.max(
      WARM_POOL_RESYNC_MS.starting,
      Math.min(status.backOff.untilMs - nowMs, WARM_POOL_RESYNC_MS.rest),
    );
  }
  if (status.pending > 0 || status.ready < status.desired) return WARM_POOL_RESYNC_MS.starting;
  return WARM_POOL_RESYNC_MS.rest;
}

function emptyStatus(template: string, image: string): WarmPoolStatus {
  return { template, image, desired: 0, ready: 0, pending: 0, made: 0, deleted: 0 };
}

/**
 * The latest kubelet refusal of a pool pod among `events`: only events that count for it
 * (src/verdict/refusal.ts `isSandboxFailureOf`: its uid, reported by its node's kubelet), with
 * the floor a decisive one states when within `boundMib` (src/verdict/refusal-bounds.ts
 * `floorBoundOf`: the smallest largest-disk of the templates sharing the image).
 */
function refusalOf(
  pod: WarmPod,
  events: Awaited<ReturnType<typeof listSandboxFailureEvents>>,
  boundMib: number,
): PodRefusal | undefined {
  let latest: PodRefusal | undefined;
  for (const event of events) {
    if (!isSandboxFailureOf(event, pod.object)) continue;
    const parsed = parseRefusal(event.message);
    if (!parsed) continue;
    const rootfsMib = parsed.decisive ? parseRootfsFloor(parsed.reason) : undefined;
    const bounded = rootfsMib !== undefined && rootfsMib <= boundMib ? rootfsMib : undefined;
    latest = {
      ...parsed,
      ...(bounded === undefined ? {} : { rootfsMib: bounded }),
      nodeName: pod.nodeName,
    };
  }
  return latest;
}

/** Records a floor a pool pod's decisive refusal stated, as a create's would be. */
async function learnFloor(
  store: Store,
  templateName: string,
  template: TemplateConfig,
  floor: { rootfsMib: number; nodeName?: string; reason: string },
  nowMs: number,
): Promise<void> {
  if (floor.rootfsMib > RESOURCE_LIMITS.diskMib) return;
  const recorded = await store.recordRootfsFloor({
    image: template.image,
    template: templateName,
    rootfsMib: floor.rootfsMib,
    learnedAtMs: nowMs,
    operationId: warmPoolWorkflowId(Context.current().info.taskQueue, templateName),
    // No tenant taught it: a name no tenant id can have (config TENANT_ID_PATTERN).
    tenantId: '(warm pool)',
    nodeName: floor.nodeName ?? null,
    reason: `cloned rootfs size ${floor.rootfsMib} MiB`,
  });
  log.info('rootfs floor learned by a warm pool', {
    template: templateName,
    image: template.image,
    rootfs_mib: floor.rootfsMib,
    recorded,
  });
}

/**
 * Tells the pool's workflow to reconcile now, unless this worker told it less than a window ago
 * (`wakeups`); a pool not running is no error.
 */
async function signalPool(template: string, wakeups: PoolWakeups): Promise<void> {
  try {
    const context = Context.current();
    const workflowId = warmPoolWorkflowId(context.info.taskQueue, template);
    await wakeups.wake(workflowId, () =>
      context.client.workflow.getHandle(workflowId).signal(WARM_POOL_CHANGED_SIGNAL),
    );
  } catch (err) {
    log.warn('the warm pool was not told of a claim; it refills at its next resync', {
      template,
      error: (err as Error).message,
    });
  }
}
