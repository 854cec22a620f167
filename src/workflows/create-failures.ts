/**
 * The failures of the `createSandbox` workflow (src/workflows/create-sandbox.ts): what a step failed
 * with, how whatever ended the create becomes its outcome (the operation's error code, message
 * and details), and the typed failure the workflow ends with.
 *
 * Deterministic: pure functions of their arguments.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancelledFailure,
  isCancellation,
} from '@temporalio/workflow';
import type { PodRef } from '../kubernetes/pods.js';
import {
  OPERATION_ERRORS,
  PLACEMENT_FAILURE_TYPES,
  errorCodeOfFailureType,
  type CreateFailureDetails,
  type CreateSandboxInput,
  type OperationErrorCode,
  type PlacementRecord,
} from '../../contract/index.js';

/** A create that ended without a sandbox, before compensation. */
export interface CreateOutcome {
  code: OperationErrorCode;
  message: string;
  details: CreateFailureDetails;
  cause?: Error;
}

/**
 * What a step failed with: an activity's (or local activity's) own failure, the cause of the
 * ActivityFailure the workflow sees; anything else as it is.
 */
export function failureOf(err: unknown): unknown {
  return err instanceof ActivityFailure ? err.cause : err;
}

/** The {@link CreateFailureDetails} an activity's ApplicationFailure carries, if any. */
export function refusalDetailsOf(err: unknown): Partial<CreateFailureDetails> | undefined {
  const failure = failureOf(err);
  if (!(failure instanceof ApplicationFailure)) return undefined;
  return failure.details?.[0] as Partial<CreateFailureDetails> | undefined;
}

/** Whether `err` is a wait's failure whose outcome its decider recorded on the operation. */
export function outcomeRecordedBy(err: unknown): boolean {
  return refusalDetailsOf(err)?.outcomeRecorded === true;
}

/** The wait's `NodeRefused` or `Unschedulable` failure, if that is what ended it. */
export function placementFailureOf(err: unknown): ApplicationFailure | undefined {
  const failure = failureOf(err);
  if (!(failure instanceof ApplicationFailure)) return undefined;
  const types: string[] = Object.values(PLACEMENT_FAILURE_TYPES);
  return failure.type && types.includes(failure.type) ? failure : undefined;
}

/**
 * Turns whatever ended the work scope into the operation's error: the deadline
 * (`pod_never_ready`) and a cancel (`cancelled`) first, whatever the interrupted step reported;
 * else the step's typed failure; else `internal`. `deadlineMs` in ms.
 */
export function describeFailure(
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
  const failure = failureOf(err);
  if (failure instanceof ApplicationFailure) {
    const code = errorCodeOfFailureType(failure.type);
    const { outcomeRecorded: _recorded, ...detail } = (failure.details?.[0] ??
      {}) as Partial<CreateFailureDetails>;
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

/**
 * The outcome another writer recorded first, from `recordOperationOutcome`'s answer
 * (src/activities/store.ts `RecordedOutcome`); undefined when this write applied or nothing else
 * was recorded.
 */
export function recordedFirst(answer: unknown): CreateOutcome | undefined {
  const { wrote, recorded } = (answer ?? {}) as {
    wrote?: boolean;
    recorded?: { status: string; error: { code: string; message: string; details: object } };
  };
  if (wrote !== false || !recorded) return undefined;
  const code = (
    recorded.status === 'cancelled' ? 'cancelled' : recorded.error.code
  ) as OperationErrorCode;
  if (!(code in OPERATION_ERRORS)) return undefined;
  return {
    code,
    message: recorded.error.message,
    details: { ...(recorded.error.details as Partial<CreateFailureDetails>), code },
  };
}

/** The error the workflow fails with: a CancelledFailure, or a typed ApplicationFailure. */
export function finalFailure(outcome: CreateOutcome): Error {
  if (outcome.code === 'cancelled') {
    return outcome.cause instanceof CancelledFailure
      ? outcome.cause
      : new CancelledFailure(outcome.message);
  }
  return ApplicationFailure.create({
    type: OPERATION_ERRORS[outcome.code].failureType,
    message: outcome.message,
    nonRetryable: true,
    details: [outcome.details],
    cause: outcome.cause,
  });
}

/** The `Internal` failure of a create whose execution was retired or superseded meanwhile. */
export function retiredWhileStarting(): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    'the execution was retired or superseded while the pod was starting',
    OPERATION_ERRORS.internal.failureType,
  );
}

/**
 * The `no_node_available` failure (non-retryable): its message names each node that refused
 * and its reason, then `why`; its details list the placements.
 */
export function noNodeAvailable(
  input: CreateSandboxInput,
  refused: PlacementRecord[],
  pod: PodRef,
  why: string,
): ApplicationFailure {
  const nodes = refused.map(
    (r) => `${r.nodeName || '(unnamed node)'} refused it (${r.code}: ${r.reason})`,
  );
  const message =
    `no node could run sandbox ${input.sandboxId}: ` +
    (nodes.length > 0 ? `${nodes.join('; ')}; ` : '') +
    why;
  const details: CreateFailureDetails = {
    code: 'no_node_available',
    podName: pod.name,
    podUid: pod.uid,
    placements: refused,
  };
  return ApplicationFailure.create({
    type: OPERATION_ERRORS.no_node_available.failureType,
    message,
    nonRetryable: true,
    details: [details],
  });
}
