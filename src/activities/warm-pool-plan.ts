/**
 * What one reconcile of a warm pool does (docs/architecture.md, "Warm pools"), as a pure
 * decision over what it listed: which pods to delete and why, how many to make, and whether the
 * pool backs off. The rules, in order, per unclaimed pod:
 *
 * | the pod                                                     | action            | a failure? |
 * | ----------------------------------------------------------- | ----------------- | ---------- |
 * | being deleted                                               | ignored           | no         |
 * | made from other inputs than the catalog's now (fingerprint) | delete `stale`    | no         |
 * | phase Failed                                                | delete `failed`   | yes        |
 * | not ready, a kubelet refusal with the decisive code (InvalidArgument) | delete `refused` | yes, and the floor it states is learned |
 * | not ready, a refusal with one of the template's `replace_on` codes | delete `refused` | yes (the next pod may land elsewhere) |
 * | no IP `stuckAfterMs` after it was made                       | delete `stuck`    | yes        |
 * | more pods than the size asks for                           | delete `surplus`  | no         |
 *
 * A pool makes no pods while the image's rootfs floor is above the pool's disk (no pod could
 * run: `blocked`), nor while backing off after failures (5 s doubling to 5 min, reset when a
 * reconcile without failures sees a ready pod), and never more than `makingAtOnce` (the pool's `max_pending`) pending.
 */
import {
  DEFAULT_WARM_POOL_MAX_PENDING,
  warmPoolBackoffMs,
  type SandboxResources,
} from '../../contract/index.js';

/** A kubelet refusal of a pool pod (src/verdict/refusal.ts `parseRefusal`, with its floor). */
export interface PodRefusal {
  code: string;
  reason: string;
  decisive: boolean;
  /** The cloned rootfs size the reason states, in MiB (`parseRootfsFloor`). */
  rootfsMib?: number;
  nodeName?: string;
}

/** A pool pod as the plan reads it. */
export interface PlannedPod {
  uid: string;
  name: string;
  /**
   * Whether this installation made it from what the catalog says now: its recorded fingerprint
   * is the current one (src/kubernetes/warm-pods.ts `warmPodFingerprint`). Pods it did not make
   * never reach the plan.
   */
  madeAsPool: boolean;
  ready: boolean;
  phase?: string;
  terminating: boolean;
  createdAtMs?: number;
  /** A kubelet refusal seen for the pod (its latest), with the node it came from. */
  refusal?: PodRefusal;
}

/** What the pool's pods should be. */
export interface PlanTarget {
  resources: SandboxResources;
  desired: number;
  /** The template's `replace_on` codes. */
  replaceOn: readonly string[];
  /** The image's rootfs floor in MiB (declared or learned), if known. */
  floorMib?: number;
}

/** The pool's memory between reconciles (held by its workflow). */
export interface PlanHistory {
  /** Reconciles in a row that saw a failure (0: none). */
  failures: number;
  /** Until when (epoch ms) the pool makes no pods; 0: not backing off. */
  backOffUntilMs: number;
  /** Why it backs off. */
  reason?: string;
}

/** Why a pod is deleted. */
export type DeleteReason = 'stale' | 'failed' | 'refused' | 'stuck' | 'surplus';

/** The plan. */
export interface ReconcilePlan {
  deletes: Array<{ uid: string; name: string; reason: DeleteReason; detail: string }>;
  make: number;
  ready: number;
  pending: number;
  /** Set when the pool makes no pods because of its floor. */
  blocked?: string;
  history: PlanHistory;
  /** Floors the refusals stated, to learn: image, MiB, node, the node's reason. */
  floors: Array<{ rootfsMib: number; nodeName?: string; reason: string }>;
}

/**
 * The most pods a pool has starting at once (its `max_pending`; default
 * DEFAULT_WARM_POOL_MAX_PENDING), and how long a pod may go without an IP, in ms.
 */
export const PLAN_DEFAULTS = {
  makingAtOnce: DEFAULT_WARM_POOL_MAX_PENDING,
  stuckAfterMs: 300_000,
} as const;

/** Plans one reconcile (see the table above). Pure; `nowMs` epoch ms. */
export function planReconcile(
  pods: readonly PlannedPod[],
  target: PlanTarget,
  history: PlanHistory,
  nowMs: number,
  limits: { makingAtOnce: number; stuckAfterMs: number } = PLAN_DEFAULTS,
): ReconcilePlan {
  const deletes: ReconcilePlan['deletes'] = [];
  const floors: ReconcilePlan['floors'] = [];
  const kept: PlannedPod[] = [];
  let failure: string | undefined;
  for (const pod of pods) {
    if (pod.terminating) continue;
    const verdict = verdictOf(pod, target, nowMs, limits.stuckAfterMs);
    if (!verdict) {
      kept.push(pod);
      continue;
    }
    deletes.push({ uid: pod.uid, name: pod.name, ...verdict });
    if (verdict.reason !== 'stale') failure = verdict.detail;
    if (pod.refusal?.decisive && pod.refusal.rootfsMib !== undefined) {
      floors.push({
        rootfsMib: pod.refusal.rootfsMib,
        nodeName: pod.refusal.nodeName,
        reason: pod.refusal.reason,
      });
    }
  }
  // Surplus: pending pods first (newest first), then ready ones (oldest first).
  const pendingPods = kept.filter((pod) => !pod.ready).sort(newestFirst);
  const readyPods = kept.filter((pod) => pod.ready).sort((a, b) => newestFirst(b, a));
  let surplus = kept.length - target.desired;
  for (const pod of [...pendingPods, ...readyPods]) {
    if (surplus <= 0) break;
    deletes.push({ uid: pod.uid, name: pod.name, reason: 'surplus', detail: 'the pool shrank' });
    surplus -= 1;
  }
  const deleted = new Set(deletes.map((d) => d.uid));
  const ready = readyPods.filter((pod) => !deleted.has(pod.uid)).length;
  const pending = pendingPods.filter((pod) => !deleted.has(pod.uid)).length;

  const learnedFloor = Math.max(target.floorMib ?? 0, ...floors.map((f) => f.rootfsMib));
  const blocked =
    learnedFloor > target.resources.diskMib
      ? `the image's rootfs floor (${learnedFloor} MiB) is above the pool's disk_mib ` +
        `(${target.resources.diskMib} MiB): no pod of the pool can run`
      : undefined;
  const next = nextHistory(history, failure, ready, nowMs);
  const backingOff = nowMs < next.backOffUntilMs;
  const room = Math.min(target.desired - ready - pending, limits.makingAtOnce - pending);
  const make = blocked || backingOff ? 0 : Math.max(0, room);
  return { deletes, make, ready, pending, ...(blocked ? { blocked } : {}), history: next, floors };
}

function newestFirst(a: PlannedPod, b: PlannedPod): number {
  return (b.createdAtMs ?? 0) - (a.createdAtMs ?? 0);
}

/** The rule of the table that deletes the pod, or undefined to keep it. */
function verdictOf(
  pod: PlannedPod,
  target: PlanTarget,
  nowMs: number,
  stuckAfterMs: number,
): { reason: DeleteReason; detail: string } | undefined {
  if (!pod.madeAsPool) {
    return { reason: 'stale', detail: `pod ${pod.name} is not what the pool makes now` };
  }
  if (pod.phase === 'Failed') return { reason: 'failed', detail: `pod ${pod.name} failed` };
  const refusal = pod.refusal;
  // Only a pod still starting: a refusal event outlives the pod's later start (events last an
  // hour), and a ready pod is not refused any more.
  if (!pod.ready && refusal && (refusal.decisive || target.replaceOn.includes(refusal.code))) {
    return {
      reason: 'refused',
      detail: `node ${refusal.nodeName ?? '(unknown)'} refused pod ${pod.name} (${refusal.code}: ${refusal.reason})`,
    };
  }
  if (!pod.ready && pod.createdAtMs !== undefined && nowMs - pod.createdAtMs > stuckAfterMs) {
    return {
      reason: 'stuck',
      detail: `pod ${pod.name} had no IP ${Math.round(stuckAfterMs / 1000)} s after it was made`,
    };
  }
  return undefined;
}

/** The pool's back-off after this reconcile: grows on a failure, resets on a clean ready pod. */
function nextHistory(
  history: PlanHistory,
  failure: string | undefined,
  ready: number,
  nowMs: number,
): PlanHistory {
  if (failure) {
    const failures = history.failures + 1;
    return { failures, backOffUntilMs: nowMs + warmPoolBackoffMs(failures), reason: failure };
  }
  if (ready > 0 && nowMs >= history.backOffUntilMs) return { failures: 0, backOffUntilMs: 0 };
  return history;
}
