/**
 * Deciding readiness waits that hold nothing (docs/architecture.md, "Waiting costs nothing").
 * The wait activity completes asynchronously (src/verdict/readiness-wait.ts) under an activity id made from
 * its pod's uid (contract/readiness-wait.ts); every worker runs one decider over its informers,
 * which, on each decisive change of a pod (its IP, a node's refusal, its failure or deletion),
 * completes or fails that activity by workflow id and activity id
 * (`RespondActivityTaskCompletedById` / `RespondActivityTaskFailedById`). The pod names its
 * workflow and re-placement policy (src/verdict/pod-wait.ts): Temporal's pending activity is the
 * only record of the wait. So a wait started by a worker that died, or one whose attempt never
 * started, is decided by any other worker (the server accepts a completion by id for an attempt
 * scheduled but not started, or in a retry's back-off, and records it against that attempt);
 * after each list of the informers (a start, a re-list) and every `reconcileIntervalMs`, the
 * creates the store says are waiting for an IP are decided against the caches.
 *
 * Several workers may decide the same wait at once: the first completion wins and the others
 * are answered NotFound, which is dropped; completing twice is harmless. A completion for a
 * pod whose wait has not been scheduled yet (or is over) is answered NotFound too: the wait
 * activity reads the caches when it starts, and the reconcile is the net.
 */
import { ActivityNotFoundError, type Client } from '@temporalio/client';
import type { ApplicationFailure } from '@temporalio/common';
import type { SpanContext } from '@opentelemetry/api';
import {
  cachedOutcome,
  eventChangeOutcome,
  podChangeOutcome,
  readOutcome,
  type ReadinessOutcome,
} from './readiness-watch.js';
import { podWaitOf, type PodWait } from './pod-wait.js';
import { DEFAULT_REFUSAL_BOUNDS, type RefusalBounds } from './refusal-bounds.js';
import type { InformerLogger, SandboxInformers } from '../kubernetes/sandbox-informers.js';
import type { Store, WaitingPod } from '../store/index.js';
import { readinessWaitActivityId } from '../../contract/index.js';
import { readinessFailure, readinessFailureLog } from './create-failure.js';
import {
  failureAtDecision,
  outcomeRecordedField,
  type FloorLearning,
} from './outcome-at-decision.js';
import { floorFields } from './rootfs-floor-evidence.js';

/** Options of {@link ReadinessDecider}. */
export interface ReadinessDeciderOptions {
  informers: SandboxInformers;
  /**
   * The store, whose operations in phase `waiting_for_ip` a reconcile decides, and where the
   * outcome at the decision is recorded.
   */
  store: Pick<Store, 'listWaitingPods' | 'recordOperationOutcome'>;
  /** A Temporal client of the worker's namespace: `activity` completes the waits by id. */
  client: Pick<Client, 'activity'>;
  logger?: InformerLogger;
  /**
   * How often every waiting create is decided against the caches, in ms (default 60 000): a net
   * under the per-change path (a completion that gave up, a change seen before its wait began
   * by a worker whose wait then died).
   */
  reconcileIntervalMs?: number;
  /**
   * How long a decisive change of a pod whose wait this worker does not hold waits before it is
   * decided here, in ms (default 2 000): the wait of another worker, whose own decider decides it
   * at the change, or one not scheduled yet, which its attempt decides from its cache when it
   * starts. Only a wait whose worker died is left to this delay (or to the reconcile).
   */
  otherWaitDelayMs?: number;
  /** How long the pods cache may lack a wait's pod before it is read once by name, in ms (default 5 000). */
  podReadDelayMs?: number;
  /**
   * Waiting creates read per store query by a reconcile (default {@link RECONCILE_PAGE_SIZE}): a
   * reconcile pages through every waiting create, however many, holding one page at a time.
   */
  reconcilePageSize?: number;
  /**
   * What a refusal event may claim (src/verdict/refusal-bounds.ts; default
   * {@link DEFAULT_REFUSAL_BOUNDS}: the global disk limit, 5 minutes of clock skew, no log).
   * The worker builds it from its template catalog, with its logger.
   */
  bounds?: RefusalBounds;
  /**
   * How a held wait's decision teaches a refusal's rootfs floor before it records the outcome
   * (src/verdict/outcome-at-decision.ts); without it the workflow's retirement alone learns it.
   */
  floors?: FloorLearning;
  /** Completion attempts per decision before the next reconcile takes over (default 8). */
  completionAttempts?: number;
  /** First delay between completion attempts, in ms (default 500; doubling, cap 10 000). */
  completionRetryDelayMs?: number;
}

/** Back-off of the reconcile after a failed store read, in ms: first delay, cap. */
const RETRY_FIRST_DELAY_MS = 1_000;
const RETRY_MAX_DELAY_MS = 10_000;

/** Waits decided at once by one reconcile (Temporal calls in flight). */
const RECONCILE_CONCURRENCY = 32;

/** Waiting creates read per page by a reconcile. */
export const RECONCILE_PAGE_SIZE = 500;

/**
 * Pods a decider remembers having decided (Temporal answered: completed, or NotFound), so a pod's
 * later changes (status updates of a running sandbox, the delete of a refused create's pod by its
 * compensation) cost no Temporal call; past it the memory starts afresh (a forgotten pod costs
 * one NotFound answer). Safe because a wait not open when this decider answered is decided by
 * its own attempt's cache read or by the worker that runs it, and the reconcile decides again.
 */
const REMEMBERED_PODS = 20_000;

/**
 * What a decider knows of one pod, by its uid: one state at a time, so the rules read as
 * transitions (set by {@link ReadinessDecider}'s `setState`, which clears the timers of the
 * state it replaces).
 *
 * - `held`: this worker's wait activity left the pod's wait asynchronous (`track`): a decisive
 *   change is decided at once. `readTimer` is the pending read by name of a pod the pods cache
 *   still lacks after `podReadDelayMs` (undefined once it ran); `record`: for a wait whose
 *   workflow asked for the outcome at the decision ({@link TrackedWait}), what its activity
 *   named (not the pod's annotations or labels).
 * - `deferred`: a decisive change (`outcome`) of a pod whose wait this worker does not hold,
 *   decided when `timer` fires (`otherWaitDelayMs` later) from the caches then; further changes
 *   meanwhile add nothing.
 * - `decided`: Temporal answered a decision (completed, or NotFound), or the activity decided
 *   the wait itself (`settled`): later changes of the pod cost no call. Only a reconcile or a
 *   read by name decides it again (`again`).
 *
 * No entry: a pod this decider has nothing pending for; a change of it is deferred. A deleted
 * pod's entry is dropped once decided (its uid never comes back), and the `decided` entries are
 * dropped all at once past {@link REMEMBERED_PODS} (a forgotten pod costs one NotFound answer).
 */
type PodState =
  | { kind: 'held'; readTimer?: NodeJS.Timeout; record?: RecordAtDecision }
  | { kind: 'deferred'; timer: NodeJS.Timeout; wait: PodWait; outcome: ReadinessOutcome }
  | { kind: 'decided' };

/**
 * A wait this worker's activity left asynchronous: the pod's wait, and whether its workflow asked
 * for the outcome at the decision (src/verdict/outcome-at-decision.ts): then a decision that ends
 * the create records the operation's outcome before it fails the wait. Waits decided from a
 * pod's annotations alone (another worker's, or by a reconcile) never record it: their
 * workflows write it themselves.
 */
/**
 * What a held wait records its outcome under, as its wait activity named it: the workflow id,
 * the sandbox (whose store row names the tenant and template a refusal's rootfs floor is learned
 * for) and the span the write is traced under.
 */
interface RecordAtDecision {
  workflowId: string;
  sandboxId?: string;
  traceParent?: SpanContext;
}

export type TrackedWait = PodWait & {
  recordOutcome?: boolean;
  /**
   * The wait activity's attempt span, when the create is traced: the outcome's write at the
   * decision is its child span (src/verdict/outcome-at-decision.ts). Only the span's ids are
   * kept (a few bytes per waiting create), not the span.
   */
  traceParent?: SpanContext;
};

/**
 * One per worker process: decides the readiness waits from the worker's informers.
 * Stops with the informers (`SandboxInformers.stop()`), or by {@link stop}.
 */
export class ReadinessDecider {
  private stopped = true;
  private unobserve: () => void = () => undefined;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private reconciling: Promise<void> | undefined;
  private reconcileAgain = false;
  /** The reconcile after a failed store read, and its next delay (1 s doubling to 10 s). */
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RETRY_FIRST_DELAY_MS;
  /** Decisions in flight, by pod uid: one per wait at a time. */
  private readonly deciding = new Map<string, Promise<void>>();
  /** What this decider knows of each pod, by uid ({@link PodState}); no entry: nothing. */
  private readonly pods = new Map<string, PodState>();
  /** How many of {@link pods} are `decided` (bounded by {@link REMEMBERED_PODS}). */
  private decidedCount = 0;

  constructor(private readonly options: ReadinessDeciderOptions) {}

  /** The bounds refusal events are held to (the wait activity judges its cache read by them too). */
  get bounds(): RefusalBounds {
    return this.options.bounds ?? DEFAULT_REFUSAL_BOUNDS;
  }

  /** Starts following the informers; decides every waiting create once they have listed. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const { informers } = this.options;
    this.unobserve = informers.observe({
      onPod: (type, pod) => {
        const wait = podWaitOf(pod);
        if (!wait) return;
        const { uid } = wait.pod;
        // A pod first seen by a list (a start, a re-list) is decided by the reconcile that
        // follows it, from the store's waiting creates: no call for every running sandbox.
        if (type === 'ADDED' && this.pods.get(uid)?.kind !== 'held') return;
        const outcome = podChangeOutcome(informers, type, pod, wait, this.bounds);
        const decision = outcome ? this.decideChange(wait, outcome) : Promise.resolve();
        // A deleted pod is forgotten once decided (a deferred decision forgets it itself).
        if (type === 'DELETED') {
          void decision.finally(() => {
            if (this.pods.get(uid)?.kind !== 'deferred') this.forget(uid);
          });
        }
      },
      onEvent: (event) => {
        // A decisive refusal, or one a re-placing wait may end on (its codes are on its pod),
        // judged against the pod as cached (its uid, its node).
        const decided = eventChangeOutcome(informers, event, this.bounds);
        if (decided) void this.decideChange(decided.wait, decided.outcome);
      },
      onPodsRefused: () => void this.reconcile(),
      onListed: () => void this.reconcile(),
      onStopped: () => this.stop(),
    });
    this.reconcileTimer = setInterval(
      () => void this.reconcile(),
      this.options.reconcileIntervalMs ?? 60_000,
    );
    this.reconcileTimer.unref();
    if (informers.synced) void this.reconcile();
  }

  /** Stops following the informers and waits for the decisions in flight. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unobserve();
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    // Pending timers go; what is held or decided stays known (a start again goes on from it).
    for (const [uid, state] of this.pods) {
      if (state.kind === 'deferred') this.setState(uid, undefined);
      else if (state.kind === 'held' && state.readTimer) {
        const { readTimer: _pending, ...kept } = state;
        this.setState(uid, kept);
      }
    }
    await Promise.allSettled([this.reconciling, ...this.deciding.values()]);
  }

  /**
   * Called by the wait activity once it went asynchronous with the pod not decided by the
   * caches: the pod is `held` from now on, so its decisive changes are decided at once (a change
   * deferred before is decided now). If the pods cache still lacks the pod after
   * `podReadDelayMs`, it is read once by name (it may have been deleted before this worker listed
   * it). A decision by this worker cancels the read.
   */
  track(wait: TrackedWait): void {
    if (this.stopped) return;
    const { uid } = wait.pod;
    const before = this.pods.get(uid);
    const readTimer = setTimeout(() => {
      // Still held: the read is no longer pending.
      if (this.pods.get(uid)?.kind === 'held') this.setState(uid, held(wait));
      if (this.stopped || this.options.informers.cachedPod(wait.pod.name)) return;
      void this.readAndDecide(wait);
    }, this.options.podReadDelayMs ?? 5_000);
    readTimer.unref();
    this.setState(uid, { ...held(wait), readTimer });
    if (before?.kind === 'deferred') this.decideDeferred(before.wait, before.outcome);
  }

  /**
   * Called by the wait activity when it decided its wait itself from the caches: a change of the
   * pod this decider deferred, or sees later, costs no Temporal call.
   */
  settled(uid: string): void {
    this.remember(uid);
  }

  /**
   * A decisive change of a pod: decided at once when this worker holds its wait; otherwise
   * deferred by `otherWaitDelayMs` and decided then from the caches, unless decided meanwhile.
   * In a burst this keeps the completion calls of waits not scheduled yet (answered NotFound,
   * each taking the workflow's lock in the history service) off the moment that counts.
   */
  private decideChange(wait: PodWait, outcome: ReadinessOutcome): Promise<void> {
    const { uid } = wait.pod;
    const state = this.pods.get(uid);
    if (state?.kind === 'held') {
      return this.decide(
        state.record ? { ...wait, ...state.record, recordOutcome: true } : wait,
        outcome,
      );
    }
    // Decided already, or a change deferred already: this one adds nothing.
    if (this.stopped || state) return Promise.resolve();
    const timer = setTimeout(() => {
      if (this.stopped) return;
      this.setState(uid, undefined);
      this.decideDeferred(wait, outcome);
    }, this.options.otherWaitDelayMs ?? 2_000);
    timer.unref();
    this.setState(uid, { kind: 'deferred', timer, wait, outcome });
    return Promise.resolve();
  }

  /**
   * Decides a deferred change now, from the caches; a pod gone from the pods cache is decided by
   * the change's own outcome (deleted), with no read, and forgotten once decided.
   */
  private decideDeferred(wait: PodWait, outcome: ReadinessOutcome): void {
    const { informers } = this.options;
    const gone = !informers.cachedPod(wait.pod.name);
    const now = gone ? outcome : cachedOutcome(informers, wait.pod, wait.placement, this.bounds);
    const decision = now ? this.decide(wait, now) : undefined;
    if (gone) void (decision ?? Promise.resolve()).finally(() => this.forget(wait.pod.uid));
  }

  /** Remembers the pod as decided: no later change of it costs a Temporal call. */
  private remember(uid: string): void {
    this.setState(uid, { kind: 'decided' });
  }

  /**
   * Forgets a deleted pod (its uid never comes back). A held pod whose decision failed stays
   * held: its read by name, or the next reconcile, decides it.
   */
  private forget(uid: string): void {
    if (this.pods.get(uid)?.kind !== 'held') this.setState(uid, undefined);
  }

  /**
   * The one place a pod's state changes: clears the timer of the state it replaces, and keeps
   * the `decided` entries under {@link REMEMBERED_PODS} (past it they are all dropped: the memory
   * starts afresh, while `held` and `deferred` pods stay). `undefined` drops the entry.
   */
  private setState(uid: string, next: PodState | undefined): void {
    const before = this.pods.get(uid);
    if (before?.kind === 'held' && before.readTimer) clearTimeout(before.readTimer);
    if (before?.kind === 'deferred') clearTimeout(before.timer);
    if (before?.kind === 'decided') this.decidedCount -= 1;
    if (!next) {
      this.pods.delete(uid);
      return;
    }
    if (next.kind === 'decided') {
      if (this.decidedCount >= REMEMBERED_PODS) {
        for (const [known, state] of this.pods) {
          if (state.kind === 'decided') this.pods.delete(known);
        }
        this.decidedCount = 0;
      }
      this.decidedCount += 1;
    }
    this.pods.set(uid, next);
  }

  /**
   * Decides every waiting create the caches can decide now (and reads once by name the pods
   * they lack). Runs one at a time; a call while one runs runs again after it.
   */
  reconcile(): Promise<void> {
    if (this.stopped || !this.options.informers.synced) return Promise.resolve();
    if (this.reconciling) {
      this.reconcileAgain = true;
      return this.reconciling;
    }
    this.reconciling = this.reconcileOnce()
      .then(
        () => {
          this.retryDelayMs = RETRY_FIRST_DELAY_MS;
        },
        (err: unknown) => {
          this.options.logger?.warn(
            { err: (err as Error).message },
            'the waiting creates could not be read; reconciling again',
          );
          this.reconcileLater();
        },
      )
      .finally(() => {
        this.reconciling = undefined;
        if (this.reconcileAgain) {
          this.reconcileAgain = false;
          void this.reconcile();
        }
      });
    return this.reconciling;
  }

  /**
   * After a failed store read (the store unreachable), reconciles again with back-off until a
   * reconcile reads the waiting creates, so a decision missed meanwhile is made within seconds
   * of the store's return rather than at the next periodic reconcile.
   */
  private reconcileLater(): void {
    if (this.stopped || this.retryTimer) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      void this.reconcile();
    }, this.retryDelayMs);
    this.retryTimer.unref();
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, RETRY_MAX_DELAY_MS);
  }

  /**
   * Pages through every create waiting for an IP (`reconcilePageSize` a page), deciding each
   * page before reading the next, so memory and Temporal calls in flight stay bounded however
   * many creates wait, and none is left out. A decision here is made even when this decider
   * made the same one before (its wait may not have been scheduled then).
   */
  private async reconcileOnce(): Promise<void> {
    await this.reconcileList(false);
    // Outcomes recorded at a decision whose wait's failure may never have reached Temporal (a
    // worker that died after the write, Temporal away past the completion attempts): their
    // rows left `waiting_for_ip`, so the list above no longer holds them.
    await this.reconcileList(true);
  }

  /** One list of {@link reconcileOnce}: the waiting creates, or those with an outcome recorded. */
  private async reconcileList(outcomeRecorded: boolean): Promise<void> {
    const { informers, store } = this.options;
    const limit = this.options.reconcilePageSize ?? RECONCILE_PAGE_SIZE;
    let after: WaitingPod | undefined;
    for (;;) {
      if (this.stopped) return;
      const waiting = await store.listWaitingPods({
        after,
        limit,
        ...(outcomeRecorded ? { outcomeRecorded } : {}),
      });
      const pending: Array<() => Promise<void>> = [];
      for (const row of waiting) {
        const pod = { name: row.podName, uid: row.podUid };
        const cached = informers.cachedPod(row.podName);
        const placement =
          cached?.metadata?.uid === row.podUid ? podWaitOf(cached)?.placement : undefined;
        const wait: PodWait = {
          workflowId: row.workflowId,
          pod,
          sandboxId: row.sandboxId,
          ...(placement ? { placement } : {}),
        };
        const outcome = cachedOutcome(informers, pod, placement, this.bounds);
        if (outcome) pending.push(() => this.decide(wait, outcome, { again: true }));
        else if (!cached) pending.push(() => this.readAndDecide(wait));
      }
      await inPool(pending, RECONCILE_CONCURRENCY);
      const last = waiting[waiting.length - 1];
      if (waiting.length < limit || !last) return;
      after = last;
    }
  }

  /** Reads a pod the cache lacks once by name, and decides its wait (404: deleted). */
  private async readAndDecide(wait: PodWait): Promise<void> {
    const { informers } = this.options;
    let outcome: ReadinessOutcome | undefined;
    try {
      outcome = await readOutcome(informers, wait);
    } catch {
      return; // the informers will report the pod; the next reconcile reads again
    }
    if (outcome) await this.decide(wait, outcome, { again: true });
  }

  /**
   * Completes (or fails) the wait's activity by id; one decision per pod at a time, and none
   * for a pod already decided unless `again`.
   */
  private decide(
    wait: TrackedWait,
    outcome: ReadinessOutcome,
    options: { again?: boolean } = {},
  ): Promise<void> {
    const { uid } = wait.pod;
    const running = this.deciding.get(uid);
    if (running) return running;
    if (!options.again && this.pods.get(uid)?.kind === 'decided') return Promise.resolve();
    const decision = this.complete(wait, outcome).finally(() => this.deciding.delete(uid));
    this.deciding.set(uid, decision);
    return decision;
  }

  private async complete(wait: TrackedWait, outcome: ReadinessOutcome): Promise<void> {
    const { client, logger } = this.options;
    const { uid } = wait.pod;
    const activity = { workflowId: wait.workflowId, activityId: readinessWaitActivityId(uid) };
    const fields = { ...createLogFields(wait), outcome: outcome.outcome };
    const failure =
      outcome.outcome === 'ready'
        ? undefined
        : wait.recordOutcome
          ? await this.recordedFailure(wait, outcome)
          : readinessFailure(outcome, wait.pod);
    const attempts = this.options.completionAttempts ?? 8;
    let delayMs = this.options.completionRetryDelayMs ?? 500;
    for (let attempt = 1; ; attempt += 1) {
      try {
        if (outcome.outcome === 'ready') {
          await client.activity.complete(activity, { podIp: outcome.podIp });
          logger?.info?.({ ...fields, pod_ip: outcome.podIp }, 'pod ready; wait completed');
        } else {
          await client.activity.fail(activity, failure);
          const line = readinessFailureLog(outcome);
          logger?.[line.level]?.(
            { ...fields, ...line.fields, ...outcomeRecordedField(failure) },
            `${line.message}; wait failed`,
          );
        }
        break;
      } catch (err) {
        // No such wait open: decided by another worker, not scheduled yet, or over.
        if (err instanceof ActivityNotFoundError) break;
        if (this.stopped || attempt >= attempts) {
          logger?.warn(
            { ...fields, err: (err as Error).message, attempt },
            'the wait could not be completed; the next reconcile retries',
          );
          return; // not remembered: the next change or reconcile retries
        }
        // Temporal unreachable (restarting): back off and try again.
        await sleep(delayMs);
        delayMs = Math.min(delayMs * 2, 10_000);
      }
    }
    // Decided: the read by name the wait activity asked for (track) has nothing left to decide.
    this.remember(uid);
  }

  /** The wait's failure, the create's outcome recorded first when it ends the create. */
  private async recordedFailure(
    wait: TrackedWait,
    outcome: Exclude<ReadinessOutcome, { outcome: 'ready' }>,
  ): Promise<ApplicationFailure> {
    const { store, logger, floors } = this.options;
    const decided = await failureAtDecision(
      store,
      {
        operationId: wait.workflowId,
        sandboxId: wait.sandboxId,
        pod: wait.pod,
        traceParent: wait.traceParent,
      },
      outcome,
      undefined,
      floors,
    );
    const ids = createLogFields(wait);
    if (decided.floor) {
      logger?.info?.(
        { ...ids, ...floorFields(decided.floor) },
        'rootfs floor learned at the decision',
      );
    }
    if (decided.floorError) {
      logger?.warn(
        { ...ids, err: decided.floorError.message },
        'the rootfs floor could not be learned at the decision; the retirement learns it',
      );
    }
    if (decided.error) {
      logger?.warn(
        { ...ids, err: decided.error.message },
        'the outcome could not be recorded at the decision; the workflow records it',
      );
    }
    return decided.failure;
  }
}

/** The create's ids a decision's log lines carry, as every log line of a create does. */
function createLogFields(wait: PodWait): Record<string, string> {
  return {
    operation_id: wait.workflowId,
    ...(wait.sandboxId ? { sandbox_id: wait.sandboxId } : {}),
    pod_uid: wait.pod.uid,
  };
}

/** The `held` state of a tracked wait, without a pending read. */
function held(wait: TrackedWait): Extract<PodState, { kind: 'held' }> {
  if (!wait.recordOutcome) return { kind: 'held' };
  const { workflowId, sandboxId, traceParent } = wait;
  return { kind: 'held', record: { workflowId, sandboxId, traceParent } };
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}

/** Runs the tasks with at most `limit` in flight; never rejects (each task handles its errors). */
async function inPool(tasks: Array<() => Promise<void>>, limit: number): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, tasks.length) }, async () => {
    while (next < tasks.length) {
      const task = tasks[next++] as () => Promise<void>;
      await task().catch(() => undefined);
    }
  });
  await Promise.all(lanes);
}
