/**
 * How the `createSandbox` workflow (src/workflows/create-sandbox.ts) calls each of its steps: the
 * activity proxies, with their timeouts, retry policies and cancellation types. One proxy per
 * kind of step; the saga says which step uses which.
 *
 * Deterministic: proxies only, no I/O.
 */
import {
  ActivityCancellationType,
  proxyActivities,
  proxyLocalActivities,
  type RetryPolicy,
} from '@temporalio/workflow';
import type { CreateActivities } from '../activities/index.js';
import {
  NOT_ADMITTED_FAILURE_TYPE,
  OPERATION_ERRORS,
  readinessWaitActivityId,
} from '../../contract/index.js';

/** Retry policy of the short steps: back-off until the create's deadline cancels them. */
const stepRetry: RetryPolicy = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
  nonRetryableErrorTypes: ['PodNameTaken'],
};

/**
 * The admission step: a store read on the worker's own database, so a local activity that runs
 * inside the first workflow task (no extra round trip per create); retried on the store's errors
 * for at most the create's deadline (`createDeadlineMs`, ms); a `NotAdmitted` answer is final.
 */
export function admissionStep(createDeadlineMs: number) {
  return proxyLocalActivities<CreateActivities>({
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: createDeadlineMs,
    retry: { ...stepRetry, nonRetryableErrorTypes: [NOT_ADMITTED_FAILURE_TYPE] },
  });
}

/**
 * The short steps whose effect must be known before compensation runs (creating the pod,
 * claiming a warm pod, marking the sandbox running, leaving a placement): a cancellation waits
 * for the step to finish, so compensation never runs while a pod may still be appearing, and a
 * sandbox already marked running is not torn down by a cancel that came too late.
 */
export const settledStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: stepRetry,
});

/**
 * The readiness wait of the pod whose uid is `podUid` (docs/architecture.md, "Waiting costs
 * nothing"). It completes asynchronously (src/verdict/readiness-wait.ts): it holds no worker slot and
 * sends no heartbeat, and any worker's informers decide it by workflow id and the activity id
 * made from the pod's uid (contract/readiness-wait.ts), so a dead worker loses nothing and there
 * is no heartbeat timeout. A cancel (or the deadline timer) resolves it at once (TRY_CANCEL): the
 * wait holds nothing to stop, so compensation starts within the workflow task. The start-to-close
 * timeout (`createDeadlineMs` + 60 s) is only a backstop for a wait nobody decides.
 */
export function readinessWait(createDeadlineMs: number, podUid: string) {
  return proxyActivities<CreateActivities>({
    activityId: readinessWaitActivityId(podUid),
    startToCloseTimeout: createDeadlineMs + 60_000,
    cancellationType: ActivityCancellationType.TRY_CANCEL,
    retry: {
      initialInterval: '1 second',
      maximumInterval: '10 seconds',
      nonRetryableErrorTypes: [
        OPERATION_ERRORS.invalid_request.failureType,
        OPERATION_ERRORS.pod_failed.failureType,
      ],
    },
  });
}

/**
 * Publishing the outcome before compensation, and recording a refused placement: a local
 * activity tried a few times only. If the store keeps failing, the create goes on without it;
 * the operation row then shows the outcome when `retireExecution` commits (it writes status,
 * error and `finished` in one transaction, retried until it succeeds), and a reader meanwhile
 * re-syncs from Temporal (src/api/operation-read.ts).
 */
export const outcomeStep = proxyLocalActivities<CreateActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', maximumAttempts: 3 },
});

/** Compensation's Kubernetes steps: idempotent, retried by Temporal until they succeed. */
export const compensationStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/**
 * Compensation's store write (retiring the execution; short, idempotent, on the worker's own
 * database): a local activity, so it runs inside the workflow task that schedules it, with no
 * task-queue round trip and no activity task of its own (Temporal, "Local Activities").
 * `markSandboxRunning` stays a regular activity ({@link settledStep}): it must finish even when a
 * cancel arrives while it runs, and a local activity's cancellation does not wait for it.
 */
export const compensationStoreStep = proxyLocalActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});
