/**
 * The `createSandbox` workflow (docs/architecture.md, "The create path"), a saga in the shape of
 * Temporal's saga sample: each step that makes something pushes its undo onto a compensation
 * stack before it runs; when the create ends without a sandbox (a refusal, the deadline, a pod
 * failure, a cancel), the stack runs in reverse, the execution is retired, and the workflow fails
 * with a typed, non-retryable ApplicationFailure the Temporal UI can show.
 *
 * Read top-down: {@link createSandbox} (the saga), then its steps in the order they run (admit,
 * the deadline, a warm claim or the placements: create the pod, wait for its IP, mark the sandbox
 * running), then the compensation (publish the outcome, undo, retire). How each step is called
 * (timeouts, retries, cancellation): src/workflows/create-step-options.ts; how a failure becomes the
 * outcome: src/workflows/create-failures.ts.
 *
 * Deterministic: no I/O, time only from the workflow API.
 *
 * Few promises: the SDK captures a stack trace for every promise made in the workflow (issue 50),
 * so a step is a plain function over its activity's promise (`.catch`/`.then`), not an `async`
 * wrapper. Each such chain takes as many promise reactions as the `async` version did, so a cancel
 * or the deadline that reaches the workflow in the same task as a step's answer is seen at the
 * same point as before, and the workflow emits the same commands.
 */
import {
  ApplicationFailure,
  CancellationScope,
  log,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { PodRef } from '../kubernetes/pods.js';
import { CreatePhaseKey, FailureCodeKey } from '../temporal/search-attribute-keys.js';
import {
  NOT_ADMITTED_FAILURE_TYPE,
  PLACEMENT_FAILURE_TYPES,
  operationErrorOf,
  rootfsFloorEvidenceOf,
  type CreatePhase,
  type CreateSandboxInput,
  type CreateSandboxResult,
  type NodeRefusalDetails,
  type PlacementPolicy,
  type PlacementRecord,
  type RootfsFloorEvidence,
} from '../../contract/index.js';
import {
  describeFailure,
  failureOf,
  finalFailure,
  noNodeAvailable,
  outcomeRecordedBy,
  placementFailureOf,
  recordedFirst,
  refusalDetailsOf,
  retiredWhileStarting,
  type CreateOutcome,
} from './create-failures.js';
import {
  admissionStep,
  compensationStep,
  compensationStoreStep,
  outcomeStep,
  readinessWait,
  settledStep,
} from './create-step-options.js';

/**
 * Creates one sandbox pod and waits until it has an IP (docs/architecture.md, "The create
 * path").
 * @returns the sandbox id and its pod `{name, uid, ip}`, with the input's `labels` and `ttl`
 *   when it has them
 * @throws ApplicationFailure (non-retryable) of type `InvalidRequest`, `PodNeverReady`,
 *   `PodFailed`, `NoNodeAvailable` or `Internal`, after compensation; its message names the
 *   cause and its first detail is a `CreateFailureDetails` (contract/create-workflow.ts)
 * @throws ApplicationFailure `NotAdmitted` (non-retryable) when the store does not hold the
 *   create as its input describes it: no pod, no compensation, no store write
 * @throws CancelledFailure when the operation was cancelled, after compensation
 */
export async function createSandbox(input: CreateSandboxInput): Promise<CreateSandboxResult> {
  // Where the admission and the compensation run: a cancel of the create cancels neither. One
  // scope for both (Temporal's `CancellationScope.nonCancellable` makes a new one per call).
  const shielded = new CancellationScope({ cancellable: false });
  await admit(input, shielded);
  const progress: CreateProgress = { compensations: [], waitScheduled: false };
  const work = new CancellationScope();
  const deadline = startDeadline(input, work);
  try {
    // The steps: each one that makes something pushes its undo before it runs.
    const result = await work.run(() => runSteps(input, progress));
    deadline.scope.cancel();
    setPhase(input, 'finished');
    return withCreateFields(input, result);
  } catch (err) {
    // The compensation: the outcome first, then the undo stack in reverse and the retirement.
    deadline.scope.cancel();
    // An outcome recorded at the decision was the operation's first: it stands, whatever else
    // (a cancel, the deadline) reached the workflow in the same task.
    const recorded = progress.waitScheduled && outcomeRecordedBy(err);
    const outcome = describeFailure(err, {
      deadlinePassed: !recorded && deadline.passed(),
      // The operation was cancelled, whatever the interrupted step reported (e.g. a timeout).
      cancelled: !recorded && CancellationScope.current().consideredCancelled,
      pod: progress.pod,
      deadlineMs: input.deadlineMs,
    });
    const final = await shielded.run(() =>
      compensate(input, progress, outcome, { recorded, adopt: progress.waitScheduled }),
    );
    throw finalFailure(final);
  }
}

/** One undo step of the compensation stack, with a short label for the logs. */
interface Compensation {
  label: string;
  run: () => Promise<unknown>;
}

/** What the steps have learned so far; read by compensation and by the failure's details. */
interface CreateProgress {
  /** The undo of each step that made something, in the order the steps ran. */
  compensations: Compensation[];
  /**
   * Whether a readiness wait was scheduled: from then on its decider may have recorded the
   * outcome first ("The outcome at the decision"), and the workflow's own write adopts it.
   */
  waitScheduled: boolean;
  pod?: PodRef;
  /** The image the last pod runs (the worker's catalog's). */
  image?: string;
}

// ---- The steps, in the order they run ----

/**
 * Step 0: admits the create (src/activities/admission.ts) before any other step, in `shielded`
 * (a non-cancellable scope): a cancel that arrives meanwhile takes effect once the answer is
 * known, so an admitted create is compensated as usual and a refused one does nothing at all.
 * A `.catch` over the scope's run, not an `async` wrapper: one promise fewer, the same promise
 * reactions before the next step.
 * @throws ApplicationFailure `NotAdmitted` (non-retryable) when the store does not hold the
 *   create as the input describes it, or could not be read within the deadline; nothing was
 *   written and no pod made
 */
function admit(input: CreateSandboxInput, shielded: CancellationScope): Promise<void> {
  return shielded
    .run(() =>
      admissionStep(input.deadlineMs).admitCreate({
        ...executionOf(input),
        tenantId: input.tenantId,
        template: input.template,
        resources: input.resources,
        deadlineMs: input.deadlineMs,
        placement: input.placement,
      }),
    )
    .catch((err: unknown) => {
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
    });
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
 * The steps that make the sandbox: a claim from the template's warm pool when it has one, else
 * placements. Placement n: create its pod (kept off every node that refused), wait for its IP,
 * mark the sandbox running. With a re-placement policy (the template names `replace_on`;
 * docs/architecture.md, "Re-placement"), a node's refusal with one of its codes records the
 * placement, deletes the pod (uid precondition) and goes on with placement n + 1, inside the
 * create's one deadline. Without one there is one placement, and the steps' inputs carry no
 * placement fields.
 * @throws ApplicationFailure `NoNodeAvailable` when the placements are used up or no node is
 *   left; its message names each node and its reason
 * @throws the failure of a step, or CancelledFailure: compensation is the caller's
 */
async function runSteps(
  input: CreateSandboxInput,
  progress: CreateProgress,
): Promise<CreateSandboxResult> {
  const policy = input.placement;
  if (input.warmPool) {
    const claimed = await claimWarmPod(input, progress);
    if (claimed) return claimed;
  }
  const refused: PlacementRecord[] = [];
  for (let placement = 1; ; placement += 1) {
    const pod = await createPod(input, progress, policy && { placement, refused, policy });
    // Phase `creating_pod` is set by the start's search attributes; no upsert for it here.
    if (placement === 1) setPhase(input, 'waiting_for_ip');
    let podIp: string;
    try {
      podIp = await awaitPodIp(input, progress, pod, policy && { placement, policy });
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
 * The warm step: one activity claims a ready pod of the template's pool (src/activities/warm-pool-pods.ts;
 * one update under the pod's resourceVersion, so no pod goes to two creates) and marks the
 * sandbox running with its IP; its delete goes onto the compensation stack. No pod create, no
 * readiness wait, no second step.
 * @returns the result, or undefined when the pool had no pod for it (the create goes cold)
 * @throws the failure of a step, or CancelledFailure: compensation is the caller's
 */
function claimWarmPod(
  input: CreateSandboxInput,
  progress: CreateProgress,
): Promise<CreateSandboxResult | undefined> {
  // Pushed before the call: a claim cut short (its update applied, its answer lost) leaves a
  // pod labelled with the sandbox id, found by that label.
  const made: { pod?: PodRef } = {};
  const compensation: Compensation = {
    label: 'delete claimed warm pod',
    run: () =>
      deletePodToUndo({ ...executionOf(input), pod: made.pod, claimedFrom: input.template }),
  };
  progress.compensations.push(compensation);
  return settledStep
    .claimWarmPod({
      ...executionOf(input),
      template: input.template,
      resources: input.resources,
    })
    .then((claimed) => {
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
      return {
        sandboxId: input.sandboxId,
        pod: { name: pod.name, uid: pod.uid, ip: claimed.podIp },
      };
    });
}

/**
 * Creates the pod of a placement, its undo ("delete pod") pushed before the call: if createPod
 * is cut short, the pod is found by its name. `placed` is set under a re-placement policy only.
 * @returns the pod (name, uid, image)
 * @throws the step's failure; a definite refusal of the apiserver (`podCreated: false`) leaves
 *   no undo behind, as there is no pod to look for
 */
function createPod(
  input: CreateSandboxInput,
  progress: CreateProgress,
  placed: { placement: number; refused: PlacementRecord[]; policy: PlacementPolicy } | undefined,
) {
  const made: { pod?: PodRef } = {};
  progress.compensations.push({
    label: placed ? `delete pod (placement ${placed.placement})` : 'delete pod',
    run: () =>
      deletePodToUndo({
        ...executionOf(input),
        ...(placed ? { placement: placed.placement } : {}),
        pod: made.pod,
      }),
  });
  return settledStep
    .createPod({
      ...executionOf(input),
      template: input.template,
      image: input.image,
      resources: input.resources,
      ...(placed
        ? {
            placement: placed.placement,
            avoidNodes: nodesOf(placed.refused),
            replaceOn: [...placed.policy.replaceOn],
          }
        : {}),
    })
    .catch((err: unknown) => {
      // The apiserver refused every attempt definitely: there is no pod to look for (and
      // with a kubeconfig that cannot work, no way to look).
      if (refusalDetailsOf(err)?.podCreated === false) progress.compensations.pop();
      throw err;
    })
    .then((pod) => {
      made.pod = pod;
      progress.pod = pod;
      progress.image = pod.image;
      return pod;
    });
}

/**
 * Waits for the pod's IP or the node's verdict (create-step-options.ts `readinessWait`), asking
 * whoever decides the wait to record the create's outcome first (src/verdict/outcome-at-decision.ts).
 * `placed` is set under a re-placement policy only.
 * @returns the pod's IP
 * @throws the wait's failure (`InvalidRequest`, `PodFailed`, `NodeRefused`, `Unschedulable`, …)
 *   or CancelledFailure
 */
function awaitPodIp(
  input: CreateSandboxInput,
  progress: CreateProgress,
  pod: PodRef,
  placed: { placement: number; policy: PlacementPolicy } | undefined,
): Promise<string> {
  progress.waitScheduled = true;
  return readinessWait(input.deadlineMs, pod.uid)
    .awaitPodReady({
      operationId: input.operationId,
      sandboxId: input.sandboxId,
      pod,
      ...(placed
        ? {
            placement: {
              replaceOn: [...placed.policy.replaceOn],
              endOnUnschedulable: placed.placement > 1,
            },
          }
        : {}),
      recordOutcome: true,
    })
    .then(({ podIp }) => podIp);
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

/** The distinct nodes that refused a placement so far: the next pod is kept off them. */
function nodesOf(refused: PlacementRecord[]): string[] {
  return [...new Set(refused.map((r) => r.nodeName).filter(Boolean))];
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

/**
 * The last step: marks the sandbox running with its pod's IP (fenced by the execution).
 * @throws ApplicationFailure `Internal` (non-retryable) when the execution was retired or
 *   superseded meanwhile (a delete, or a newer activation)
 */
function markRunning(
  input: CreateSandboxInput,
  pod: PodRef,
  podIp: string,
): Promise<CreateSandboxResult> {
  return settledStep
    .markSandboxRunning({
      ...executionOf(input),
      podIp,
      podUid: pod.uid,
    })
    .then((marked) => {
      if (!marked) throw retiredWhileStarting();
      return { sandboxId: input.sandboxId, pod: { name: pod.name, uid: pod.uid, ip: podIp } };
    });
}

/**
 * The result with the input's `labels` and `ttl`, when it has any (docs/nexus.md: the Nexus
 * create's result repeats them).
 */
function withCreateFields(
  input: CreateSandboxInput,
  result: CreateSandboxResult,
): CreateSandboxResult {
  if (input.labels === undefined && input.ttl === undefined) return result;
  return {
    ...result,
    ...(input.labels !== undefined ? { labels: { ...input.labels } } : {}),
    ...(input.ttl !== undefined ? { ttl: input.ttl } : {}),
  };
}

// ---- The compensation, when the create ends without a sandbox ----

/**
 * Makes the outcome visible the moment it is known, before compensation: one search-attribute
 * upsert (phase `compensating` and the failure code together), then the operation row (status
 * failed/cancelled, the error, phase `compensating`, not done) by a local activity in the same
 * workflow task. A failed write does not hold compensation back (create-step-options.ts
 * `outcomeStep`). An outcome `recorded` at the decision is not written again; and (`adopt`,
 * once a readiness wait was scheduled) when the write finds another outcome recorded first (at
 * a decision that raced a cancel or the deadline), that one is the create's outcome.
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
 * The compensation: publishes the outcome ({@link publishOutcome}; `at` is its), runs the
 * compensation stack in reverse, then retires the execution with the published outcome's code.
 * Each undo step is retried by Temporal until it succeeds (create-step-options.ts
 * `compensationStep`); run non-cancellable.
 * @returns the create's outcome, as {@link publishOutcome} returns it
 */
async function compensate(
  input: CreateSandboxInput,
  progress: CreateProgress,
  failed: CreateOutcome,
  at: { recorded: boolean; adopt: boolean },
): Promise<CreateOutcome> {
  const outcome = await publishOutcome(input, failed, at);
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
  return outcome;
}

/**
 * The undo of a pod the create made or claimed: delete it (by the uid it had, or found by its
 * name or label when its step was cut short). A refusal of the service's account that has lasted
 * its bound leaves the pod to the orphan sweeper (docs/reliability.md), so the create still ends.
 */
function deletePodToUndo(
  args: Omit<Parameters<typeof compensationStep.deletePod>[0], 'leaveToSweeper'>,
) {
  return compensationStep.deletePod({ ...args, leaveToSweeper: true });
}

/**
 * The rootfs floor a failed create teaches (contract/create-workflow.ts `rootfsFloorEvidenceOf`),
 * for the image the pod ran (the worker's catalog's), or the input's when no pod said it.
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

// ---- Small helpers ----

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
