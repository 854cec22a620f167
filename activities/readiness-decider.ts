/**
 * Deciding readiness waits that hold nothing (docs/architecture.md, "Waiting costs nothing").
 * The wait activity records its task token in the store and completes asynchronously
 * (activities/pods.ts); every worker runs one decider over its informers, which, on each
 * decisive change of a pod (its IP, a node's refusal, its failure or deletion), looks the wait
 * up by the pod's uid and completes or fails the activity through Temporal's async completion
 * (`RespondActivityTaskCompleted` / `RespondActivityTaskFailed` by task token). So a wait
 * started by a worker that died is decided by any other worker, and after each list of the
 * informers (a start, a re-list) every recorded wait is decided against the caches: a refusal
 * recorded while no worker ran is decided when one starts.
 *
 * Several workers may decide the same wait at once: the first completion wins and the others
 * are answered NotFound, which is dropped; completing twice is harmless.
 */
import { ActivityNotFoundError, WorkflowNotFoundError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import {
  cachedOutcome,
  podOutcome,
  refusalOutcome,
  type ReadinessOutcome,
} from '../kubernetes/readiness-watch.js';
import { parseRefusal } from '../kubernetes/refusal.js';
import { DEFAULT_REFUSAL_BOUNDS, type RefusalBounds } from '../kubernetes/refusal-bounds.js';
import type { InformerLogger, SandboxInformers } from '../kubernetes/sandbox-informers.js';
import type { V1Pod } from '@kubernetes/client-node';
import type { ReadinessWait, Store, UnrecordedWait } from '../store/index.js';
import { readinessFailure, readinessFailureLog } from './create-failure.js';

/** Options of {@link ReadinessDecider}. */
export interface ReadinessDeciderOptions {
  informers: SandboxInformers;
  store: Store;
  /**
   * A Temporal client of the worker's namespace: `activity` completes the waits, `workflow`
   * describes a create whose wait was never recorded.
   */
  client: Pick<Client, 'activity' | 'workflow'>;
  logger?: InformerLogger;
  /**
   * How often every recorded wait is decided against the caches, in ms (default 60 000): a net
   * under the per-change path (a store read that failed, a completion that gave up).
   */
  reconcileIntervalMs?: number;
  /**
   * How often the creates waiting with no recorded wait are looked for, in ms (default 10 000),
   * and how old their wait attempt must be to count as lost, in ms (default 15 000).
   */
  unrecordedCheckIntervalMs?: number;
  unrecordedAfterMs?: number;
  /** How long the pods cache may lack a wait's pod before it is read once by name, in ms (default 5 000). */
  podReadDelayMs?: number;
  /**
   * Waits read per store query by a reconcile (default {@link RECONCILE_PAGE_SIZE}): a reconcile
   * pages through every recorded wait, however many, holding one page at a time.
   */
  reconcilePageSize?: number;
  /**
   * Creates read per store query by the check for waits never recorded (default
   * {@link UNRECORDED_PAGE_SIZE}); each is described, so a check reads at most two pages.
   */
  unrecordedPageSize?: number;
  /**
   * What a refusal event may claim (kubernetes/refusal-bounds.ts; default
   * {@link DEFAULT_REFUSAL_BOUNDS}: the global disk limit, 5 minutes of clock skew, no log).
   * The worker builds it from its template catalog, with its logger.
   */
  bounds?: RefusalBounds;
  /** Completion attempts per decision before the next reconcile takes over (default 8). */
  completionAttempts?: number;
  /** First delay between completion attempts, in ms (default 500; doubling, cap 10 000). */
  completionRetryDelayMs?: number;
}

/**
 * `temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED` (@temporalio/proto,
 * whose CommonJS exports an ES module import cannot name).
 */
const PENDING_ACTIVITY_STARTED = 2;

/** Back-off of the reconcile after a failed store read, in ms: first delay, cap. */
const RETRY_FIRST_DELAY_MS = 1_000;
const RETRY_MAX_DELAY_MS = 10_000;

/** Waits decided at once by one reconcile (Temporal calls in flight). */
const RECONCILE_CONCURRENCY = 32;

/** Recorded waits read per page by a reconcile (about 1 KiB each: the task token). */
export const RECONCILE_PAGE_SIZE = 500;

/** Creates without a recorded wait read (and described) per page by one lost-wait check. */
export const UNRECORDED_PAGE_SIZE = 100;

/**
 * One per worker process: decides the recorded readiness waits from the worker's informers.
 * Stops with the informers (`SandboxInformers.stop()`), or by {@link stop}.
 */
export class ReadinessDecider {
  private stopped = true;
  private unobserve: () => void = () => undefined;
  private reconcileTimer: NodeJS.Timeout | undefined;
  private unrecordedTimer: NodeJS.Timeout | undefined;
  private checkingUnrecorded = false;
  /** Where the lost-wait check's second page starts: after this create (undefined: the newest). */
  private unrecordedCursor: { updatedAt: string; operationId: string } | undefined;
  private reconciling: Promise<void> | undefined;
  private reconcileAgain = false;
  /** The reconcile after a failed store read, and its next delay (1 s doubling to 10 s). */
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelayMs = RETRY_FIRST_DELAY_MS;
  /** Decisions in flight, by task token: one per wait attempt at a time. */
  private readonly deciding = new Map<string, Promise<void>>();
  /** The pending reads by name of {@link track}, by task token: cancelled once the wait is decided. */
  private readonly readTimers = new Map<string, NodeJS.Timeout>();

  constructor(private readonly options: ReadinessDeciderOptions) {}

  /** The bounds refusal events are held to (the wait activity judges its cache read by them too). */
  get bounds(): RefusalBounds {
    return this.options.bounds ?? DEFAULT_REFUSAL_BOUNDS;
  }

  /** Starts following the informers; decides every recorded wait once they have listed. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const { informers } = this.options;
    this.unobserve = informers.observe({
      onPod: (type, pod) => {
        const uid = pod.metadata?.uid;
        if (!uid) return;
        if (podOutcome(type, pod, uid)) {
          this.decideByUid(uid, (wait) => podOutcome(type, pod, uid, wait.placement));
        } else if (pod.spec?.nodeName && informers.cachedEvents(uid).length > 0) {
          // Bound to its node now: a refusal cached before the binding was seen may count.
          const ref = { name: pod.metadata?.name ?? '', uid };
          this.decideByUid(uid, (wait) =>
            cachedOutcome(informers, ref, wait.placement, this.bounds),
          );
        } else if (mayBeUnschedulable(pod)) {
          // Decisive only for a re-placing wait (its policy is on the wait's row).
          this.decideByUid(uid, (wait) => podOutcome(type, pod, uid, wait.placement));
        }
      },
      onEvent: (event) => {
        const uid = event.involvedObject?.uid;
        if (!uid) return;
        // A decisive refusal, or one a re-placing wait may end on (its codes are on its row),
        // judged against the pod as cached (its uid, its node).
        const pod = informers.cachedPod(event.involvedObject?.name ?? '');
        if (pod?.metadata?.uid !== uid || !parseRefusal(event.message)) return;
        this.decideByUid(uid, (wait) => refusalOutcome(event, pod, wait.placement, this.bounds));
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
    this.unrecordedTimer = setInterval(
      () => void this.retryUnrecorded(),
      this.options.unrecordedCheckIntervalMs ?? 10_000,
    );
    this.unrecordedTimer.unref();
    if (informers.synced) void this.reconcile();
  }

  /** Stops following the informers and waits for the decisions in flight. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.unobserve();
    if (this.reconcileTimer) clearInterval(this.reconcileTimer);
    if (this.unrecordedTimer) clearInterval(this.unrecordedTimer);
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    for (const timer of this.readTimers.values()) clearTimeout(timer);
    this.readTimers.clear();
    await Promise.allSettled([this.reconciling, ...this.deciding.values()]);
  }

  /**
   * Called by the wait activity once it went asynchronous with the pod not decided by the
   * caches: if the pods cache still lacks the pod after `podReadDelayMs` and the wait is still
   * recorded (not decided meanwhile, by this worker or another), it is read once by name (it may
   * have been deleted before this worker listed it). A decision by this worker cancels the read.
   */
  track(wait: ReadinessWait | Omit<ReadinessWait, 'createdAt'>): void {
    if (this.stopped) return;
    this.cancelRead(wait.taskToken);
    const timer = setTimeout(() => {
      this.readTimers.delete(wait.taskToken);
      if (this.stopped || this.options.informers.cachedPod(wait.podName)) return;
      void this.options.store.findReadinessWait(wait.podUid).then(
        (recorded) => {
          if (recorded?.taskToken === wait.taskToken) return this.readAndDecide(wait);
        },
        () => this.readAndDecide(wait), // the store unreachable: read anyway, as before
      );
    }, this.options.podReadDelayMs ?? 5_000);
    timer.unref();
    this.readTimers.set(wait.taskToken, timer);
  }

  /** Cancels the pending read by name of a wait ({@link track}), if any. */
  private cancelRead(taskToken: string): void {
    const timer = this.readTimers.get(taskToken);
    if (timer) clearTimeout(timer);
    this.readTimers.delete(taskToken);
  }

  /**
   * Decides every recorded wait the caches can decide now (and reads once by name the pods
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
            'the readiness waits could not be read; reconciling again',
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
   * reconcile reads the waits, so a decision missed meanwhile is made within seconds of the
   * store's return rather than at the next periodic reconcile.
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
   * Pages through every recorded wait (pod uid order, `reconcilePageSize` a page), deciding each
   * page before reading the next, so memory and Temporal calls in flight stay bounded however
   * many creates wait, and none is left out.
   */
  private async reconcileOnce(): Promise<void> {
    const { informers, store } = this.options;
    const limit = this.options.reconcilePageSize ?? RECONCILE_PAGE_SIZE;
    let after: string | undefined;
    for (;;) {
      if (this.stopped) return;
      const waits = await store.listReadinessWaits({ after, limit });
      const pending: Array<() => Promise<void>> = [];
      for (const wait of waits) {
        const pod = { name: wait.podName, uid: wait.podUid };
        const outcome = cachedOutcome(informers, pod, wait.placement, this.bounds);
        if (outcome) pending.push(() => this.decide(wait, outcome));
        else if (!informers.cachedPod(wait.podName)) pending.push(() => this.readAndDecide(wait));
      }
      await inPool(pending, RECONCILE_CONCURRENCY);
      const last = waits[waits.length - 1];
      if (waits.length < limit || !last) return;
      after = last.podUid;
    }
  }

  /**
   * A worker that dies between taking a wait's task and recording it leaves an attempt nobody
   * can decide (no row, no heartbeat timeout). For each create waiting with no recorded wait,
   * the workflow is described; a started wait attempt older than `unrecordedAfterMs` that never
   * heartbeat (a heartbeating one is a wait of the release before, in a live process) is failed
   * by workflow id and activity id with a retryable `WaitNotRecorded` failure, so Temporal
   * schedules a new attempt, which records itself. Runs one at a time.
   *
   * Each check reads the newest page of such creates (a wait lost lately is found at the next
   * check) and, when that page is full, one page further back, from where the last check's second
   * page stopped (back to the newest after the last page). So every create is checked within
   * about total / `unrecordedPageSize` checks, and one check describes at most two pages.
   */
  async retryUnrecorded(): Promise<void> {
    if (this.stopped || this.checkingUnrecorded) return;
    this.checkingUnrecorded = true;
    const { store, logger } = this.options;
    const limit = this.options.unrecordedPageSize ?? UNRECORDED_PAGE_SIZE;
    const updatedBefore = (): string =>
      new Date(Date.now() - (this.options.unrecordedAfterMs ?? 15_000)).toISOString();
    try {
      const newest = await store.listUnrecordedWaits({ updatedBefore: updatedBefore(), limit });
      await this.retryEach(newest);
      const lastNewest = newest[newest.length - 1];
      if (newest.length < limit || !lastNewest || this.stopped) {
        this.unrecordedCursor = undefined;
        return;
      }
      const before = this.unrecordedCursor ?? lastNewest;
      const further = await store.listUnrecordedWaits({
        updatedBefore: updatedBefore(),
        limit,
        before: { updatedAt: before.updatedAt, operationId: before.operationId },
      });
      const seen = new Set(newest.map((wait) => wait.operationId));
      await this.retryEach(further.filter((wait) => !seen.has(wait.operationId)));
      const lastFurther = further[further.length - 1];
      this.unrecordedCursor =
        further.length < limit || !lastFurther
          ? undefined
          : { updatedAt: lastFurther.updatedAt, operationId: lastFurther.operationId };
    } catch (err) {
      logger?.warn(
        { err: (err as Error).message },
        'the waits without a record could not be checked; the next check retries',
      );
    } finally {
      this.checkingUnrecorded = false;
    }
  }

  /** Describes each create of `lost` and fails its lost wait attempt (see {@link retryUnrecorded}). */
  private async retryEach(lost: UnrecordedWait[]): Promise<void> {
    const { client, logger, store } = this.options;
    const afterMs = this.options.unrecordedAfterMs ?? 15_000;
    for (const { operationId, workflowId } of lost) {
      if (this.stopped) return;
      // One create that cannot be described (its workflow gone past retention: NotFound)
      // must not stop the check of the others behind it.
      const description = await client.workflow
        .getHandle(workflowId)
        .describe()
        .catch((err: unknown) => {
          if (!(err instanceof WorkflowNotFoundError)) {
            logger?.warn(
              { operation_id: operationId, err: (err as Error).message },
              'a create waiting without a recorded wait could not be described; skipped',
            );
          }
          return undefined;
        });
      if (description?.status.name !== 'RUNNING') continue;
      const attempt = description.raw.pendingActivities?.find(
        (activity) =>
          activity.activityType?.name === 'awaitPodReady' &&
          activity.state === PENDING_ACTIVITY_STARTED &&
          !activity.lastHeartbeatTime &&
          Number(activity.lastStartedTime?.seconds ?? 0) * 1000 < Date.now() - afterMs,
      );
      if (!attempt?.activityId) continue;
      // Recorded meanwhile (a slow worker, not a dead one): leave it.
      const stillLost = await store.listUnrecordedWaits({
        updatedBefore: new Date(Date.now() - afterMs).toISOString(),
        limit: 1,
        operationId,
      });
      if (stillLost.length === 0) continue;
      await client.activity
        .fail(
          { workflowId, runId: description.runId, activityId: attempt.activityId },
          ApplicationFailure.retryable(
            'the worker that took this wait stopped before recording it; waiting again',
            'WaitNotRecorded',
          ),
        )
        .catch((err: unknown) => {
          if (!(err instanceof ActivityNotFoundError)) throw err;
        });
      logger?.warn(
        { operation_id: operationId, attempt: attempt.attempt },
        'a wait was never recorded (its worker died); Temporal retries it',
      );
    }
  }

  /**
   * A change of the pod `uid` that may be decisive: decides its wait, if one is recorded and
   * `outcomeOf` (given the wait, whose placement policy it may read) decides it.
   */
  private decideByUid(
    uid: string,
    outcomeOf: (wait: ReadinessWait) => ReadinessOutcome | undefined,
  ): void {
    if (this.stopped) return;
    this.options.store.findReadinessWait(uid).then(
      (wait) => {
        const outcome = wait && outcomeOf(wait);
        return wait && outcome ? this.decide(wait, outcome) : undefined;
      },
      (err: unknown) => {
        this.options.logger?.warn(
          { pod_uid: uid, err: (err as Error).message },
          'the readiness wait could not be read; reconciling',
        );
        this.reconcileLater();
      },
    );
  }

  /** Reads a pod the cache lacks once by name, and decides its wait (404: deleted). */
  private async readAndDecide(wait: Omit<ReadinessWait, 'createdAt'>): Promise<void> {
    let outcome: ReadinessOutcome | undefined;
    try {
      const current = await this.options.informers.readPod(wait.podName);
      outcome = current
        ? podOutcome('MODIFIED', current, wait.podUid, wait.placement)
        : {
            outcome: 'podFailed',
            reason: this.options.informers.missingPodReason({
              name: wait.podName,
              uid: wait.podUid,
            }),
          };
    } catch {
      return; // the informers will report the pod; the next reconcile reads again
    }
    if (outcome) await this.decide(wait, outcome);
  }

  /** Completes (or fails) the wait's activity by task token; one decision per token at a time. */
  private decide(wait: Omit<ReadinessWait, 'createdAt'>, outcome: ReadinessOutcome): Promise<void> {
    const running = this.deciding.get(wait.taskToken);
    if (running) return running;
    const decision = this.complete(wait, outcome).finally(() =>
      this.deciding.delete(wait.taskToken),
    );
    this.deciding.set(wait.taskToken, decision);
    return decision;
  }

  private async complete(
    wait: Omit<ReadinessWait, 'createdAt'>,
    outcome: ReadinessOutcome,
  ): Promise<void> {
    const { client, logger, store } = this.options;
    const completion = client.activity;
    const token = Buffer.from(wait.taskToken, 'base64');
    const fields = {
      operation_id: wait.operationId,
      sandbox_id: wait.sandboxId,
      pod_uid: wait.podUid,
      outcome: outcome.outcome,
    };
    const attempts = this.options.completionAttempts ?? 8;
    let delayMs = this.options.completionRetryDelayMs ?? 500;
    for (let attempt = 1; ; attempt += 1) {
      try {
        if (outcome.outcome === 'ready') {
          await completion.complete(token, { podIp: outcome.podIp });
          logger?.info?.({ ...fields, pod_ip: outcome.podIp }, 'pod ready; wait completed');
        } else {
          await completion.fail(
            token,
            readinessFailure(outcome, { name: wait.podName, uid: wait.podUid }),
          );
          const line = readinessFailureLog(outcome);
          logger?.[line.level]?.({ ...fields, ...line.fields }, `${line.message}; wait failed`);
        }
        break;
      } catch (err) {
        // The activity is closed already (decided by another worker, or its workflow moved on).
        if (err instanceof ActivityNotFoundError) break;
        if (this.stopped || attempt >= attempts) {
          logger?.warn(
            { ...fields, err: (err as Error).message, attempt },
            'the wait could not be completed; the next reconcile retries',
          );
          return; // the row stays: this worker's next reconcile, or another worker's, retries
        }
        // Temporal unreachable (restarting): back off and try again.
        await sleep(delayMs);
        delayMs = Math.min(delayMs * 2, 10_000);
      }
    }
    // Decided: the read by name the wait activity asked for (track) has nothing left to decide.
    this.cancelRead(wait.taskToken);
    await store.clearReadinessWait(wait.podUid, wait.taskToken).catch(() => undefined);
  }
}

/** Whether a pod change may make a re-placing wait's pod unschedulable (no node, condition set). */
function mayBeUnschedulable(pod: V1Pod): boolean {
  return (
    !pod.spec?.nodeName &&
    (pod.status?.conditions ?? []).some(
      (c) => c.type === 'PodScheduled' && c.status === 'False' && c.reason === 'Unschedulable',
    )
  );
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
