/**
 * The `createSandbox` workflow (docs/architecture.md, "The create path"): create the pod, wait for its IP while
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
  deprecatePatch,
  isCancellation,
  log,
  proxyActivities,
  proxyLocalActivities,
  type RetryPolicy,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { CreateActivities } from '../activities/index.js';
import type { PodRef } from '../kubernetes/pods.js';
import { CreatePhaseKey, FailureCodeKey } from '../temporal/search-attribute-keys.js';
import {
  NOT_ADMITTED_FAILURE_TYPE,
  OPERATION_ERRORS,
  PLACEMENT_FAILURE_TYPES,
  errorCodeOfFailureType,
  operationErrorOf,
  readinessWaitActivityId,
  rootfsFloorEvidenceOf,
  type CreateFailureDetails,
  type NodeRefusalDetails,
  type PlacementPolicy,
  type PlacementRecord,
  type RootfsFloorEvidence,
  type CreatePhase,
  type CreateSandboxInput,
  type CreateSandboxResult,
  type OperationErrorCode,
} from '../../contract/index.js';

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
 * The patch of "Waiting costs nothing" (docs/architecture.md): the readiness wait completes
 * asynchronously and holds no watch, so it has no heartbeat timeout and is cancelled with
 * TRY_CANCEL. Deprecated:
 * every history a worker may meet records it (docs/testing.md, "Which histories must replay").
 * Exit plan: docs/testing.md, "Patch exit plan".
 */
export const ASYNC_READINESS_WAIT_PATCH = 'async-readiness-wait';

/**
 * The patch of "One record: Temporal's" (docs/architecture.md, "Waiting costs nothing"): the
 * asynchronous readiness wait is scheduled under the activity id of its pod
 * (contract/readiness-wait.ts), so any worker completes it by workflow id and activity id and the
 * store keeps no task token. Deprecated:
 * every history a worker may meet records it (docs/testing.md, "Which histories must replay").
 * Exit plan: docs/testing.md, "Patch exit plan".
 */
export const READINESS_WAIT_BY_ID_PATCH = 'readiness-wait-by-id';

/**
 * The readiness wait of the pod `podUid`. It completes asynchronously (src/verdict/readiness-wait.ts): it
 * holds no worker slot and sends no heartbeat, and any worker's informers decide it by workflow id
 * and the activity id made from the pod's uid (contract/readiness-wait.ts), so a dead worker
 * loses nothing, nothing but Temporal records the wait, and there is no heartbeat timeout. A cancel (or the deadline timer) resolves it at once
 * (TRY_CANCEL): the wait holds nothing to stop, so compensation starts within the workflow task.
 * The start-to-close timeout (deadline + 60 s) is only a backstop for a wait nobody decides.
 * Both of its patches are deprecated (docs/testing.md, "Patch exit plan").
 */
function readinessWait(createDeadlineMs: number, podUid: string) {
  deprecatePatch(ASYNC_READINESS_WAIT_PATCH);
  deprecatePatch(READINESS_WAIT_BY_ID_PATCH);
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
 * The patch of "A compensation the service account may not do" (docs/reliability.md): the
 * compensation's pod delete stops at a refusal of the service's account (RBAC 403, 401) that
 * has lasted its bound, leaving the pod to the orphan sweeper, so the create still ends.
 * Deprecated:
 * every history a worker may meet records it (docs/testing.md, "Which histories must replay").
 * Exit plan: docs/testing.md, "Patch exit plan".
 */
export const DELETE_LEFT_TO_SWEEPER_PATCH = 'compensation-delete-left-to-sweeper';

/** The options of a compensation's pod delete: `leaveToSweeper` (the patch is deprecated). */
function compensationDelete(): { leaveToSweeper: true } {
  deprecatePatch(DELETE_LEFT_TO_SWEEPER_PATCH);
  return { leaveToSweeper: true };
}

/** Compensation steps: idempotent, retried by Temporal until they succeed. */
const compensationStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/**
 * Store writes of compensation and of the outcome (short, idempotent, on the worker's own
 * database): local activities, so each runs inside the workflow task that schedules it, with no
 * task-queue round trip and no activity task of its own (Temporal, "Local Activities").
 * `markSandboxRunning` stays a regular activity: it must finish even when a cancel arrives while
 * it runs (settledStep), and a local activity's cancellation does not wait for it to finish.
 */
const compensationStoreStep = proxyLocalActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/**
 * Publishing the outcome before compensation: a local activity tried a few times only. If the
 * store keeps failing, compensation goes on without it; the operation row then shows the
 * outcome when `retireExecution` commits (it writes status, error and `finished` in one
 * transaction, retried until it succeeds), and a reader meanwhile re-syncs from Temporal
 * (src/api/operations.ts).
 */
const outcomeStep = proxyLocalActivities<CreateActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '200 milliseconds', maximumAttempts: 3 },
});

/**
 * The patch of "What the worker trusts" (docs/security.md): before anything else, the worker
 * checks the input against the store (src/activities/admission.ts), so a workflow started by anyone
 * but the API makes no pod and writes nothing. Deprecated:
 * every history a worker may meet records it (docs/testing.md, "Which histories must replay").
 * Exit plan: docs/testing.md, "Patch exit plan".
 */
export const WORKER_ADMISSION_PATCH = 'worker-admission';

/**
 * The admission step: a store read on the worker's own database, so a local activity that runs
 * inside the first workflow task (no extra round trip per create); retried on the store's errors
 * for at most the create's deadline; a `NotAdmitted` answer is final.
 */
function admissionStep(createDeadlineMs: number) {
  return proxyLocalActivities<CreateActivities>({
    startToCloseTimeout: '30 seconds',
    scheduleToCloseTimeout: createDeadlineMs,
    retry: { ...stepRetry, nonRetryableErrorTypes: [NOT_ADMITTED_FAILURE_TYPE] },
  });
}

/**
 * Admits the create (src/activities/admission.ts) before any step. Not cancellable: a cancel that
 * arrives meanwhile takes effect once the answer is known, so an admitted create is compensated
 * as usual and a refused one does nothing at all.
 * @throws ApplicationFailure `NotAdmitted` (non-retryable) when the store does not hold the
 *   create as the input describes it, or could not be read within the deadline; nothing was
 *   written and no pod made
 */
async function admit(input: CreateSandboxInput): Promise<void> {
  try {
    await CancellationScope.nonCancellable(() =>
      admissionStep(input.deadlineMs).admitCreate({
        ...executionOf(input),
        tenantId: input.tenantId,
        template: input.template,
        resources: input.resources,
        deadlineMs: input.deadlineMs,
        placement: input.placement,
      }),
    );
  } catch (err) {
    const failure = failureOf(err);
    const refused =
      failure instanceof ApplicationFailure && failure.type === NOT_ADMITTED_FAILURE_TYPE;
    throw ApplicationFailure.create({
      type: NOT_ADMITTED_FAILURE_TYPE,
      nonRetryable: true,
      message: refused
        ? failure.message
        : `could not check create of sandbox ${input.sandboxId} against the store within its ` +
          `deadline: ${(failure as Error)?.message ?? String(failure)}`,
    });
  }
}

/** One undo step of the compensation stack, with a short label for the logs. */
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

/** What the steps have learned so far; read by compensation and by the failure's details. */
interface CreateProgress {
  compensations: Compensation[];
  /**
   * Whether the waits asked for the outcome at the decision ({@link OUTCOME_AT_DECISION_PATCH});
   * set when the first wait is scheduled, unset before.
   */
  outcomeAtDecision?: boolean;
  pod?: PodRef;
  /** The image the last pod runs (the worker's catalog's); unset in histories before it. */
  image?: string;
}

/**
 * Creates one sandbox pod and waits until it has an IP (docs/architecture.md, "The create
 * path").
 * @returns the sandbox id and its pod `{name, uid, ip}`
 * @throws ApplicationFailure (non-retryable) of type `InvalidRequest`, `PodNeverReady`,
 *   `PodFailed` or `Internal`, after compensation; its message names the cause and its first
 *   detail is {@link CreateFailureDetails}
 * @throws ApplicationFailure `NotAdmitted` (non-retryable) when the store does not hold the
 *   create as its input describes it: no pod, no compensation, no store write
 * @throws CancelledFailure when the operation was cancelled, after compensation
 */
export async function createSandbox(input: CreateSandboxInput): Promise<CreateSandboxResult> {
  deprecatePatch(WORKER_ADMISSION_PATCH);
  await admit(input);
  const progress: CreateProgress = { compensations: [] };
  const work = new CancellationScope();
  const deadline = startDeadline(input, work);
  try {
    const result = await work.run(() => runSteps(input, progress));
    deadline.scope.cancel();
    setPhase(input, 'finished');
    return withCreateFields(input, result);
  } catch (err) {
    deadline.scope.cancel();
    // An outcome recorded at the decision was the operation's first: it stands, whatever else
    // (a cancel, the deadline) reached the workflow in the same task.
    const recorded = progress.outcomeAtDecision === true && outcomeRecordedBy(err);
    const outcome = describeFailure(err, {
      deadlinePassed: !recorded && deadline.passed(),
      // The operation was cancelled, whatever the interrupted step reported (e.g. a timeout).
      cancelled: !recorded && CancellationScope.current().consideredCancelled,
      pod: progress.pod,
      deadlineMs: input.deadlineMs,
    });
    const final = await CancellationScope.nonCancellable(async () => {
      const published = await publishOutcome(input, outcome, {
        recorded,
        adopt: progress.outcomeAtDecision === true,
      });
      await compensate(input, progress, published);
      return published;
    });
    throw finalFailure(final);
  }
}

/**
 * The patch of "The create's labels and lifetime in its result" (docs/nexus.md): a create whose
 * input carries `labels` or `ttl` repeats them in its result, which is the Nexus create's. Inputs
 * without them end with `{ sandboxId, pod }`. Deprecated:
 * every history a worker may meet records it (docs/testing.md, "Which histories must replay").
 * Exit plan: docs/testing.md, "Patch exit plan".
 */
export const CREATE_RESULT_FIELDS_PATCH = 'create-result-labels-ttl';

/** The result with the input's `labels` and `ttl`, when it has any and the patch applies. */
function withCreateFields(
  input: CreateSandboxInput,
  result: CreateSandboxResult,
): CreateSandboxResult {
  if (input.labels === undefined && input.ttl === undefined) return result;
  deprecatePatch(CREATE_RESULT_FIELDS_PATCH);
  return {
    ...result,
    ...(input.labels !== undefined ? { labels: { ...input.labels } } : {}),
    ...(input.ttl !== undefined ? { ttl: input.ttl } : {}),
  };
}

/**
 * The patch of "The outcome at the decision" (docs/architecture.md): each readiness wait asks
 * whoever decides it to record the create's outcome on the operation before failing it
 * (src/verdict/outcome-at-decision.ts), so `failed` shows without a workflow task; a failure
 * that says so is the outcome, and the workflow writes none. Its own outcome write reads back
 * the outcome recorded first when it did not write, and the create ends with that one.
 * Deprecated:
 * every history a worker may meet records it (docs/testing.md, "Which histories must replay").
 * Exit plan: docs/testing.md, "Patch exit plan".
 */
export const OUTCOME_AT_DECISION_PATCH = 'outcome-at-decision';

/** Whether `err` is a wait's failure whose outcome its decider recorded on the operation. */
function outcomeRecordedBy(err: unknown): boolean {
  return refusalDetailsOf(err)?.outcomeRecorded === true;
}

/**
 * The create's deadline (docs/architecture.md, "Deadline"): a workflow timer, not a workflow
 * timeout, so compensation still runs. When it fires it cancels `work`; the readiness wait in
 * it is cancelled with it (the wait has no timer of its own).
 */
function startDeadline(
  input: CreateSandboxInput,
  work: CancellationScope,
): { scope: CancellationScope; passed: () => boolean } {
  const deadlineAtMs = workflowInfo().startTime.getTime() + input.deadlineMs;
  const scope = new CancellationScope();
  let passed = false;
  void scope
    .run(() => sleep(Math.max(0, deadlineAtMs - Date.now())))
    .then(
      () => {
        passed = true;
        work.cancel();
      },
      () => undefined,
    );
  return { scope, passed: () => passed };
}

/**
 * The patch of "Re-placement" (docs/architecture.md): a create whose input carries a placement
 * policy (its template names `replace_on`) runs the placement loop. Inputs
 * without one run the one-placement steps unchanged. Deprecated:
 * every history a worker may meet records it (docs/testing.md, "Which histories must replay").
 * Exit plan: docs/testing.md, "Patch exit plan".
 */
export const RE_PLACEMENT_PATCH = 're-placement';

/**
 * The steps, in the shape of Temporal's saga sample: each step that makes something pushes its
 * undo onto `progress.compensations` before it runs, and the caller runs the stack in reverse
 * when the create ends without a sandbox ({@link compensate}).
 *
 * Placement n: create its pod (kept off every node that refused), wait for its IP, mark the
 * sandbox running. With a re-placement policy (the template names `replace_on`;
 * docs/architecture.md, "Re-placement"), a node's refusal with one of its codes records the
 * placement, deletes the pod (uid precondition) and goes on with placement n + 1, inside the
 * create's one deadline. Without one there is one placement and the steps' inputs carry no
 * placement fields.
 * @throws ApplicationFailure `NoNodeAvailable` when the placements are used up or no node is
 *   left; its message names each node and its reason
 * @throws the failure of a step, or CancelledFailure: compensation is the caller's
 */
async function runSteps(
  input: CreateSandboxInput,
  progress: CreateProgress,
): Promise<CreateSandboxResult> {
  if (input.placement) deprecatePatch(RE_PLACEMENT_PATCH);
  const policy = input.placement;
  const execution = executionOf(input);
  if (input.warmPool) {
    deprecatePatch(WARM_POOL_PATCH);
    const claimed = await claimWarmPod(input, progress);
    if (claimed) return claimed;
  }
  const refused: PlacementRecord[] = [];
  for (let placement = 1; ; placement += 1) {
    const placed = policy ? { placement } : {};
    // Pushed before the call: if createPod is cut short, the pod is found by its name.
    const made: { pod?: PodRef } = {};
    progress.compensations.push({
      label: policy ? `delete pod (placement ${placement})` : 'delete pod',
      run: () =>
        compensationStep.deletePod({
          ...execution,
          ...placed,
          pod: made.pod,
          ...compensationDelete(),
        }),
    });
    const pod = await settledStep
      .createPod({
        ...execution,
        template: input.template,
        image: input.image,
        resources: input.resources,
        ...(policy
          ? { placement, avoidNodes: nodesOf(refused), replaceOn: [...policy.replaceOn] }
          : {}),
      })
      .catch((err: unknown) => {
        // The apiserver refused every attempt definitely: there is no pod to look for (and
        // with a kubeconfig that cannot work, no way to look).
        if (refusalDetailsOf(err)?.podCreated === false) progress.compensations.pop();
        throw err;
      });
    made.pod = pod;
    progress.pod = pod;
    progress.image = pod.image;
    // Phase `creating_pod` is set by the start's search attributes; no upsert for it here.
    if (placement === 1) setPhase(input, 'waiting_for_ip');
    if (progress.outcomeAtDecision === undefined) {
      deprecatePatch(OUTCOME_AT_DECISION_PATCH);
      progress.outcomeAtDecision = true;
    }

    let podIp: string;
    try {
      ({ podIp } = await readinessWait(input.deadlineMs, pod.uid).awaitPodReady({
        operationId: input.operationId,
        sandboxId: input.sandboxId,
        pod,
        ...(policy
          ? {
              placement: { replaceOn: [...policy.replaceOn], endOnUnschedulable: placement > 1 },
            }
          : {}),
        ...(progress.outcomeAtDecision ? { recordOutcome: true } : {}),
      }));
    } catch (err) {
      const failure = policy ? placementFailureOf(err) : undefined;
      if (!policy || !failure) throw err;
      await leavePlacement(input, policy, { placement, pod, failure, refused });
      continue;
    }
    return markRunning(input, pod, podIp);
  }
}

/**
 * The patch of "Warm pools" (docs/architecture.md): a create whose input says its template had
 * a matching pool first claims a ready pod of it. Inputs without `warmPool` go straight to
 * creating a pod. Deprecated:
 * every history a worker may meet records it (docs/testing.md, "Which histories must replay").
 * Exit plan: docs/testing.md, "Patch exit plan".
 */
export const WARM_POOL_PATCH = 'warm-pool-claim';

/**
 * The warm step: one activity claims a ready pod of the template's pool (src/activities/warm-pools.ts;
 * one update under the pod's resourceVersion, so no pod goes to two creates) and marks the
 * sandbox running with its IP; its delete goes onto the compensation stack. No pod create, no
 * readiness wait, no second step.
 * @returns the result, or undefined when the pool had no pod for it (the create goes cold)
 * @throws the failure of a step, or CancelledFailure: compensation is the caller's
 */
async function claimWarmPod(
  input: CreateSandboxInput,
  progress: CreateProgress,
): Promise<CreateSandboxResult | undefined> {
  const execution = executionOf(input);
  // Pushed before the call: a claim cut short (its update applied, its answer lost) leaves a
  // pod labelled with the sandbox id, found by that label.
  const made: { pod?: PodRef } = {};
  const compensation: Compensation = {
    label: 'delete claimed warm pod',
    run: () =>
      compensationStep.deletePod({
        ...execution,
        pod: made.pod,
        claimedFrom: input.template,
        ...compensationDelete(),
      }),
  };
  progress.compensations.push(compensation);
  const claimed = await settledStep.claimWarmPod({
    ...execution,
    template: input.template,
    resources: input.resources,
  });
  if (!claimed) {
    // Cold: the pool had none, so there is nothing to undo.
    progress.compensations.splice(progress.compensations.indexOf(compensation), 1);
    return undefined;
  }
  const pod = claimed.pod;
  made.pod = pod;
  progress.pod = pod;
  progress.image = pod.image;
  if (!claimed.marked) throw retiredWhileStarting();
  return { sandboxId: input.sandboxId, pod: { name: pod.name, uid: pod.uid, ip: claimed.podIp } };
}

/** The distinct nodes that refused a placement so far: the next pod is kept off them. */
function nodesOf(refused: PlacementRecord[]): string[] {
  return [...new Set(refused.map((r) => r.nodeName).filter(Boolean))];
}

/**
 * A placement whose wait ended `NodeRefused` or `Unschedulable`: records it, deletes its pod
 * by uid (so kubelet stops retrying it on that node) and returns, so the next placement runs.
 * @throws ApplicationFailure `NoNodeAvailable` when no other node can take the pod or the
 *   template's placements are used up
 */
async function leavePlacement(
  input: CreateSandboxInput,
  policy: PlacementPolicy,
  ended: {
    placement: number;
    pod: PodRef;
    failure: ApplicationFailure;
    refused: PlacementRecord[];
  },
): Promise<void> {
  const { placement, pod, failure, refused } = ended;
  if (failure.type === PLACEMENT_FAILURE_TYPES.unschedulable) {
    throw noNodeAvailable(input, refused, pod, `no other node can take it (${failure.message})`);
  }
  const details = failure.details?.[0] as NodeRefusalDetails;
  const record: PlacementRecord = {
    placement,
    nodeName: details.nodeName,
    code: details.code,
    reason: details.reason,
    // The workflow's clock when the event carries no time: deterministic on replay.
    at: details.eventLastTimestamp ?? new Date(Date.now()).toISOString(),
    podName: pod.name,
    podUid: pod.uid,
  };
  refused.push(record);
  await recordPlacement(input, record);
  await settledStep.deletePod({ ...executionOf(input), placement, pod });
  if (placement >= policy.maxPlacements) {
    throw noNodeAvailable(
      input,
      refused,
      pod,
      `the ${policy.maxPlacements} placements of template ${input.template} are used up`,
    );
  }
}

/**
 * The last step: marks the sandbox running with its pod's IP (fenced by the execution).
 * @throws ApplicationFailure `Internal` (non-retryable) when the execution was retired or
 *   superseded meanwhile (a delete, or a newer activation)
 */
async function markRunning(
  input: CreateSandboxInput,
  pod: PodRef,
  podIp: string,
): Promise<CreateSandboxResult> {
  const marked = await settledStep.markSandboxRunning({
    ...executionOf(input),
    podIp,
    podUid: pod.uid,
  });
  if (!marked) throw retiredWhileStarting();
  return { sandboxId: input.sandboxId, pod: { name: pod.name, uid: pod.uid, ip: podIp } };
}

/** The `Internal` failure of a create whose execution was retired or superseded meanwhile. */
function retiredWhileStarting(): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    'the execution was retired or superseded while the pod was starting',
    OPERATION_ERRORS.internal.failureType,
  );
}

/** The wait's `NodeRefused` or `Unschedulable` failure, if that is what ended it. */
function placementFailureOf(err: unknown): ApplicationFailure | undefined {
  const failure = failureOf(err);
  if (!(failure instanceof ApplicationFailure)) return undefined;
  const types: string[] = Object.values(PLACEMENT_FAILURE_TYPES);
  return failure.type && types.includes(failure.type) ? failure : undefined;
}

/**
 * Records a refused placement on the operation (and counts it) by a local activity tried a few
 * times: a store that keeps failing does not hold the create back.
 */
async function recordPlacement(input: CreateSandboxInput, placement: PlacementRecord) {
  try {
    await outcomeStep.recordPlacement({
      operationId: input.operationId,
      sandboxId: input.sandboxId,
      template: input.template,
      placement,
    });
  } catch (err) {
    log.warn('the refused placement was not recorded; the create goes on', {
      operation_id: input.operationId,
      placement: placement.placement,
      error: (err as Error).message,
    });
  }
}

/** The `no_node_available` failure: its message names each node that refused and its reason. */
function noNodeAvailable(
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

/**
 * Runs the compensation stack in reverse, then retires the execution with the outcome's code.
 * Each step is retried by Temporal until it succeeds (compensationStep); run non-cancellable.
 */
async function compensate(
  input: CreateSandboxInput,
  progress: CreateProgress,
  outcome: CreateOutcome,
): Promise<void> {
  const podUid = progress.pod?.uid;
  for (const compensation of [...progress.compensations].reverse()) {
    log.info('compensating', {
      step: compensation.label,
      operation_id: input.operationId,
      sandbox_id: input.sandboxId,
      pod_uid: podUid,
    });
    await compensation.run();
  }
  await compensationStoreStep.retireExecution({
    ...executionOf(input),
    podUid,
    reason: outcome.code,
    failure: { code: outcome.code, message: outcome.message },
    refusalEventTime: outcome.details.eventLastTimestamp,
    rootfsFloor: learnedRootfsFloor(input, progress, outcome),
  });
  setPhase(input, 'finished');
}

/**
 * The rootfs floor a failed create teaches (contract/create-workflow.ts `rootfsFloorEvidenceOf`),
 * for the image the pod ran (the worker's catalog's), or the input's in histories recorded
 * before createPod said it.
 */
function learnedRootfsFloor(
  input: CreateSandboxInput,
  progress: CreateProgress,
  outcome: CreateOutcome,
): RootfsFloorEvidence | undefined {
  return rootfsFloorEvidenceOf(outcome.details, outcome.message, {
    image: progress.image ?? input.image,
    template: input.template,
    tenantId: input.tenantId,
  });
}

/**
 * Makes the outcome visible the moment it is known, before compensation: one search-attribute
 * upsert (phase `compensating` and the failure code together), then the operation row (status
 * failed/cancelled, the error, phase `compensating`, not done) by a local activity in the same
 * workflow task. A failed write does not hold compensation back (see outcomeStep).
 *
 * From {@link OUTCOME_AT_DECISION_PATCH} on (`at`): an outcome `recorded` at the decision is not
 * written again; and (`adopt`) when the write finds another outcome recorded first (at a
 * decision that raced a cancel or the deadline), that one is the create's outcome.
 * @returns the create's outcome: `outcome`, or the one recorded first
 */
async function publishOutcome(
  input: CreateSandboxInput,
  outcome: CreateOutcome,
  at: { recorded: boolean; adopt: boolean },
): Promise<CreateOutcome> {
  upsert(input, [
    [CreatePhaseKey, 'compensating'],
    [FailureCodeKey, outcome.code],
  ]);
  if (at.recorded) return outcome;
  let final = outcome;
  try {
    const answer: unknown = await outcomeStep.recordOperationOutcome({
      operationId: input.operationId,
      sandboxId: input.sandboxId,
      podUid: outcome.details.podUid,
      status: outcome.code === 'cancelled' ? 'cancelled' : 'failed',
      error: operationErrorOf(outcome.message, outcome.details),
      ...(at.adopt ? { tenantId: input.tenantId } : {}),
    });
    if (at.adopt) final = recordedFirst(answer) ?? outcome;
  } catch (err) {
    log.warn('the operation outcome was not recorded; compensation goes on', {
      operation_id: input.operationId,
      error: (err as Error).message,
    });
  }
  if (final.code !== outcome.code) upsert(input, [[FailureCodeKey, final.code]]);
  return final;
}

/**
 * The outcome another writer recorded first, from `recordOperationOutcome`'s answer
 * (src/activities/store.ts `RecordedOutcome`); undefined when this write applied or nothing else
 * was recorded.
 */
function recordedFirst(answer: unknown): CreateOutcome | undefined {
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
function finalFailure(outcome: CreateOutcome): Error {
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

/** The execution the activities write for, with the operation id their logs carry. */
function executionOf(input: CreateSandboxInput) {
  return {
    operationId: input.operationId,
    sandboxId: input.sandboxId,
    generation: input.generation,
    attempt: input.attempt,
  };
}

function setPhase(input: CreateSandboxInput, phase: CreatePhase): void {
  upsert(input, [[CreatePhaseKey, phase]]);
}

/**
 * Upserts Keyword search attributes in one command, leaving out those the input does not list
 * as registered (when it lists them): an upsert of an attribute the namespace lacks fails every
 * workflow task, and so would stop compensation (docs/architecture.md, "Search attributes").
 */
function upsert(
  input: CreateSandboxInput,
  // every key of src/temporal/search-attribute-keys.ts is a Keyword
  pairs: Array<[key: typeof CreatePhaseKey, value: string]>,
): void {
  const registered = pairs.filter(
    ([key]) => !input.searchAttributes || input.searchAttributes.includes(key.name),
  );
  if (registered.length === 0) return;
  upsertSearchAttributes(registered.map(([key, value]) => ({ key, value })));
}

/**
 * What a step failed with: an activity's (or local activity's) own failure, the cause of the
 * ActivityFailure the workflow sees; anything else as it is.
 */
function failureOf(err: unknown): unknown {
  return err instanceof ActivityFailure ? err.cause : err;
}

/** The {@link CreateFailureDetails} an activity's ApplicationFailure carries, if any. */
function refusalDetailsOf(err: unknown): Partial<CreateFailureDetails> | undefined {
  const failure = failureOf(err);
  if (!(failure instanceof ApplicationFailure)) return undefined;
  return failure.details?.[0] as Partial<CreateFailureDetails> | undefined;
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
