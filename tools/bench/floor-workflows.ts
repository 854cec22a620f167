/**
 * The Temporal floors `npm run bench`'s outcome benchmark measures the product against (docs/benchmarks.md):
 * workflows whose activities do nothing, on the same dev server, worker process and machine.
 */
import {
  ApplicationFailure,
  CancellationScope,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  upsertSearchAttributes,
} from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';

/** The no-op activities of the floors (tools/bench/outcomes.ts implements them). */
export interface FloorActivities {
  /** Does nothing. */
  step(): Promise<void>;
  /** Fails at once, non-retryable. */
  refuse(): Promise<void>;
}

const { step, refuse } = proxyActivities<FloorActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});

const local = proxyLocalActivities<FloorActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});

const CreatePhaseKey = defineSearchAttributeKey('CreatePhase', SearchAttributeType.KEYWORD);
const FailureCodeKey = defineSearchAttributeKey('FailureCode', SearchAttributeType.KEYWORD);

/** One activity that succeeds: the least a successful create can cost on Temporal. */
export async function floorOneActivity(): Promise<void> {
  await step();
}

/** One activity that fails: the least a refusal can cost on Temporal. */
export async function floorOneFailingActivity(): Promise<void> {
  await refuse();
}

/**
 * The create's shape as it was before issue 11: create pod, readiness wait (refused), then
 * compensation (delete pod, retire execution) as activities, a phase upsert at each step, and
 * the failure visible when the workflow has failed.
 */
export async function floorCreateShape(): Promise<void> {
  upsertSearchAttributes([{ key: CreatePhaseKey, value: 'creating_pod' }]);
  await step();
  upsertSearchAttributes([{ key: CreatePhaseKey, value: 'waiting_for_ip' }]);
  try {
    await refuse();
  } catch {
    upsertSearchAttributes([{ key: CreatePhaseKey, value: 'compensating' }]);
    await step();
    await step();
    upsertSearchAttributes([{ key: CreatePhaseKey, value: 'finished' }]);
    throw ApplicationFailure.nonRetryable('refused', 'InvalidRequest');
  }
}

/** Which elements of a refusal's Temporal shape a floor keeps (all, in `floorRefusalShape`). */
interface ShapeElements {
  /**
   * The local activities: admission and the retirement (the outcome is written at the decision,
   * docs/architecture.md, "The outcome at the decision"; it was a third before).
   */
  localActivities: boolean;
  /** The three search-attribute upserts (phase, outcome, finished). */
  upserts: boolean;
  /** The create's deadline timer (30 min, cancelled at the refusal). */
  deadlineTimer: boolean;
}

/**
 * A refused create's Temporal shape (docs/architecture.md, "Round trips per create"), every step
 * a no-op, with the elements `keep` names: the admission local activity, the deadline timer,
 * createPod, the phase upsert, the readiness wait (refused), the outcome upsert, the pod delete,
 * the retirement local activity and the last upsert. With all of them: 4 workflow tasks, 3
 * activity tasks, 2 local activities.
 * @throws ApplicationFailure `InvalidRequest` (non-retryable), always
 */
async function refusalShape(keep: ShapeElements): Promise<void> {
  if (keep.localActivities) await local.step();
  const deadline = new CancellationScope();
  if (keep.deadlineTimer) void deadline.run(() => sleep('30 minutes')).catch(() => undefined);
  await step();
  if (keep.upserts) upsertSearchAttributes([{ key: CreatePhaseKey, value: 'waiting_for_ip' }]);
  try {
    await refuse();
  } catch {
    deadline.cancel();
    if (keep.upserts)
      upsertSearchAttributes([
        { key: CreatePhaseKey, value: 'compensating' },
        { key: FailureCodeKey, value: 'invalid_request' },
      ]);
    await step();
    if (keep.localActivities) await local.step();
    if (keep.upserts) upsertSearchAttributes([{ key: CreatePhaseKey, value: 'finished' }]);
  }
  throw ApplicationFailure.nonRetryable('refused', 'InvalidRequest');
}

const ALL: ShapeElements = { localActivities: true, upserts: true, deadlineTimer: true };

/**
 * A refused create's Temporal shape today, every step a no-op: what Temporal and the SDK cost a
 * refused create whatever its steps do, the CPU floor of a refusal (tools/bench/open-loop.ts).
 */
export async function floorRefusalShape(): Promise<void> {
  await refusalShape(ALL);
}

/** {@link floorRefusalShape} without its local activities (tools/bench/shapes.ts). */
export async function floorRefusalShapeNoLocalActivities(): Promise<void> {
  await refusalShape({ ...ALL, localActivities: false });
}

/** {@link floorRefusalShape} without its search-attribute upserts (tools/bench/shapes.ts). */
export async function floorRefusalShapeNoUpserts(): Promise<void> {
  await refusalShape({ ...ALL, upserts: false });
}

/** {@link floorRefusalShape} without its deadline timer (tools/bench/shapes.ts). */
export async function floorRefusalShapeNoTimer(): Promise<void> {
  await refusalShape({ ...ALL, deadlineTimer: false });
}

/** Three activities and nothing else: createPod, the refused wait, the delete. */
export async function floorRefusalShapeActivitiesOnly(): Promise<void> {
  await refusalShape({ localActivities: false, upserts: false, deadlineTimer: false });
}

/**
 * A cold create that succeeds, every step a no-op (src/workflows/create-sandbox.ts;
 * docs/architecture.md, "Round trips per create", success: 4 workflow tasks, 3 activity tasks,
 * 1 local activity): the admission local activity, the deadline timer, createPod, the phase
 * upsert, the readiness wait, markSandboxRunning, the deadline cancelled and the last upsert.
 * The CPU floor of a cold create (tools/bench/cpu.ts).
 */
export async function floorCreateSuccessShape(): Promise<void> {
  await local.step();
  const deadline = new CancellationScope();
  void deadline.run(() => sleep('30 minutes')).catch(() => undefined);
  await step();
  upsertSearchAttributes([{ key: CreatePhaseKey, value: 'waiting_for_ip' }]);
  await step();
  await step();
  deadline.cancel();
  upsertSearchAttributes([{ key: CreatePhaseKey, value: 'finished' }]);
}

/**
 * A warm claim, every step a no-op (src/workflows/create-sandbox.ts, `claimWarmPod`): the admission
 * local activity, the deadline timer, the one claim activity (it marks the sandbox running), the
 * deadline cancelled and the last upsert. The CPU floor of a warm claim (tools/bench/cpu.ts).
 */
export async function floorWarmClaimShape(): Promise<void> {
  await local.step();
  const deadline = new CancellationScope();
  void deadline.run(() => sleep('30 minutes')).catch(() => undefined);
  await step();
  deadline.cancel();
  upsertSearchAttributes([{ key: CreatePhaseKey, value: 'finished' }]);
}

/**
 * A delete of a running sandbox, every step a no-op (src/workflows/delete-sandbox.ts, its create
 * already closed): admitDelete, readSandboxPod, deletePod and markSandboxDeleted, one activity
 * after the other. The CPU floor of a delete (tools/bench/cpu.ts).
 */
export async function floorDeleteShape(): Promise<void> {
  for (let i = 0; i < 4; i++) await step();
}

/** What {@link floorExpiryShape} returns: the delete workflow its activity started. */
export interface FollowedBy {
  /** The workflow id of the delete-shaped workflow, which the bench awaits too. */
  followedBy: string;
}

/**
 * An expiry, every step a no-op (src/workflows/sandbox-lifetime.ts): the lifetime's timer (1 s
 * here; it was started at the create in the product, so the floor's start is extra), then the
 * expireSandbox local activity, which starts a {@link floorDeleteShape} workflow with the client,
 * as the product's starts `deleteSandbox` (tools/bench/outcomes.ts, `startDeleteShape`).
 * @returns the delete's workflow id, which `startFloors`' `run` waits for as well
 */
export async function floorExpiryShape(): Promise<FollowedBy> {
  await sleep('1 second');
  return { followedBy: await floorExpiryStep.startDeleteShape() };
}

/** The floors' expiry step (tools/bench/outcomes.ts implements it). */
export interface FloorExpiryActivities {
  /** Starts a {@link floorDeleteShape} workflow; @returns its workflow id */
  startDeleteShape(): Promise<string>;
}

/** A local activity, as the product's expiry step (src/workflows/sandbox-lifetime.ts). */
const floorExpiryStep = proxyLocalActivities<FloorExpiryActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});
