/**
 * The `createSandbox` workflow (design.md section 4): create the pod, wait for its IP while
 * watching its events, mark the sandbox running. On a refusal, the deadline, a pod failure or
 * cancellation, compensate (delete the pod, retire the execution) and fail with a typed,
 * non-retryable ApplicationFailure the Temporal UI can show.
 *
 * Deterministic: no I/O, time only from the workflow API.
 */
import {
  ActivityCancellationType,
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  log,
  proxyActivities,
  type RetryPolicy,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { CreateActivities } from '../activities/index.js';
import type { PodRef } from '../kubernetes/pods.js';
import { CreatePhaseKey, FailureCodeKey } from './search-attributes.js';
import {
  FAILURE_TYPES,
  errorCodeOfFailureType,
  type CreateFailureDetails,
  type CreatePhase,
  type CreateSandboxInput,
  type CreateSandboxResult,
  type OperationErrorCode,
} from './types.js';

/** Retry policy of the short steps: back-off until the create's deadline cancels them. */
const stepRetry: RetryPolicy = {
  initialInterval: '500 milliseconds',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
  nonRetryableErrorTypes: ['PodNameTaken'],
};

/**
 * The short steps whose effect must be known before compensation runs (creating the pod,
 * marking the sandbox running): a cancellation waits for the step to finish, so compensation
 * never runs while a pod may still be appearing, and a sandbox already marked running is not
 * torn down by a cancel that came too late.
 */
const settledStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  retry: stepRetry,
});

/**
 * The readiness wait: long-running and heartbeating, so a dead worker's wait moves to another
 * worker after the heartbeat timeout. Cancellation waits until the activity has stopped its
 * watches, so compensation never races a live watch.
 */
function readinessWait(deadlineMs: number) {
  return proxyActivities<CreateActivities>({
    startToCloseTimeout: deadlineMs + 60_000,
    heartbeatTimeout: '20 seconds',
    cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
    retry: {
      initialInterval: '1 second',
      maximumInterval: '10 seconds',
      nonRetryableErrorTypes: [FAILURE_TYPES.invalid_request, FAILURE_TYPES.pod_failed],
    },
  });
}

/** Compensation steps: idempotent, retried by Temporal until they succeed. */
const compensationStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

interface Compensation {
  label: string;
  run: () => Promise<unknown>;
}

/** A create that ended without a sandbox, before compensation. */
interface CreateOutcome {
  code: OperationErrorCode;
  message: string;
  details: CreateFailureDetails;
  cause?: Error;
}

/**
 * Creates one sandbox pod and waits until it has an IP.
 * @returns the sandbox id and its pod `{name, uid, ip}`
 * @throws ApplicationFailure (non-retryable) of type `InvalidRequest`, `PodNeverReady`,
 *   `PodFailed` or `Internal`, after compensation; its message names the cause and its first
 *   detail is {@link CreateFailureDetails}
 * @throws CancelledFailure when the operation was cancelled, after compensation
 */
export async function createSandbox(input: CreateSandboxInput): Promise<CreateSandboxResult> {
  const execution = {
    operationId: input.operationId,
    sandboxId: input.sandboxId,
    generation: input.generation,
    attempt: input.attempt,
  };
  const deadlineAtMs = workflowInfo().startTime.getTime() + input.deadlineMs;
  const compensations: Compensation[] = [];
  let pod: PodRef | undefined;
  let deadlinePassed = false;

  const work = new CancellationScope();
  const deadline = new CancellationScope();
  // The deadline is a workflow timer, not a workflow timeout, so compensation still runs.
  void deadline
    .run(() => sleep(Math.max(0, deadlineAtMs - Date.now())))
    .then(
      () => {
        deadlinePassed = true;
        work.cancel();
      },
      () => undefined,
    );

  try {
    const result = await work.run(async () => {
      setPhase('creating_pod');
      // Pushed before the call: if createPod is cut short, the pod is found by its name.
      compensations.push({
        label: 'delete pod',
        run: () => compensationStep.deletePod({ ...execution, pod }),
      });
      pod = await settledStep.createPod({
        ...execution,
        template: input.template,
        image: input.image,
        resources: input.resources,
      });
      const created = pod;

      setPhase('waiting_for_ip');
      const wait = await readinessWait(input.deadlineMs).awaitPodReady({
        operationId: input.operationId,
        sandboxId: input.sandboxId,
        pod: created,
        deadlineAtMs,
      });
      if ('deadline' in wait) {
        deadlinePassed = true;
        throw new CancelledFailure('deadline passed');
      }
      const marked = await settledStep.markSandboxRunning({
        ...execution,
        podIp: wait.podIP,
        podUid: created.uid,
      });
      if (!marked) {
        throw ApplicationFailure.nonRetryable(
          'the execution was retired or superseded while the pod was starting',
          FAILURE_TYPES.internal,
        );
      }
      return { sandboxId: input.sandboxId, pod: { ...created, ip: wait.podIP } };
    });
    deadline.cancel();
    setPhase('finished');
    return result;
  } catch (err) {
    deadline.cancel();
    const outcome = describeFailure(err, {
      deadlinePassed,
      // The operation was cancelled, whatever the interrupted step reported (e.g. a timeout).
      cancelled: CancellationScope.current().consideredCancelled,
      pod,
      deadlineMs: input.deadlineMs,
    });
    await CancellationScope.nonCancellable(async () => {
      setPhase('compensating');
      upsertSearchAttributes([{ key: FailureCodeKey, value: outcome.code }]);
      for (const compensation of compensations.reverse()) {
        log.info('compensating', {
          step: compensation.label,
          operation_id: input.operationId,
          sandbox_id: input.sandboxId,
          pod_uid: pod?.uid,
        });
        await compensation.run();
      }
      await compensationStep.retireExecution({
        ...execution,
        podUid: pod?.uid,
        reason: outcome.code,
        failure: { code: outcome.code, message: outcome.message },
        refusalEventTime: outcome.details.eventLastTimestamp,
      });
      setPhase('finished');
    });
    if (outcome.code === 'cancelled') {
      throw outcome.cause instanceof CancelledFailure
        ? outcome.cause
        : new CancelledFailure(outcome.message);
    }
    throw ApplicationFailure.create({
      type: FAILURE_TYPES[outcome.code],
      message: outcome.message,
      nonRetryable: true,
      details: [outcome.details],
      cause: outcome.cause,
    });
  }
}

function setPhase(phase: CreatePhase): void {
  upsertSearchAttributes([{ key: CreatePhaseKey, value: phase }]);
}

/** Turns whatever ended the work scope into the operation's error. */
function describeFailure(
  err: unknown,
  context: { deadlinePassed: boolean; cancelled: boolean; pod?: PodRef; deadlineMs: number },
): CreateOutcome {
  const podFields = { podName: context.pod?.name, podUid: context.pod?.uid };
  if (context.deadlinePassed) {
    const what = context.pod ? `pod ${context.pod.name} had no IP` : 'the pod was not created';
    return {
      code: 'pod_never_ready',
      message: `${what} within the create deadline of ${Math.round(context.deadlineMs / 1000)} s`,
      details: { code: 'pod_never_ready', ...podFields },
    };
  }
  if (context.cancelled || isCancellation(err)) {
    return {
      code: 'cancelled',
      message: 'the create was cancelled',
      details: { code: 'cancelled', ...podFields },
      cause: err as Error,
    };
  }
  const failure = err instanceof ActivityFailure ? err.cause : err;
  if (failure instanceof ApplicationFailure) {
    const code = errorCodeOfFailureType(failure.type);
    const detail = failure.details?.[0] as Partial<CreateFailureDetails> | undefined;
    // No `cause`: the activity's failure has the same message and details, and its stack trace
    // (local file paths) would only repeat them in the Temporal UI.
    return { code, message: failure.message, details: { ...podFields, ...detail, code } };
  }
  return {
    code: 'internal',
    message: `the create failed: ${(err as Error)?.message ?? String(err)}`,
    details: { code: 'internal', ...podFields },
    cause: err instanceof Error ? err : undefined,
  };
}
