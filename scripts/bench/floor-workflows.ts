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

/** The no-op activities of the floors (scripts/bench/outcomes.ts implements them). */
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

/**
 * A refused create's Temporal shape today (docs/architecture.md, "Round trips per create"), every
 * step a no-op: the admission local activity, the deadline timer (30 min, cancelled), createPod,
 * the phase upsert, the readiness wait (refused), the outcome upsert and local activity, the
 * pod delete, the retirement local activity and the last upsert: 4 workflow tasks, 3 activity
 * tasks, 3 local activities. What Temporal and the SDK cost a refused create whatever its steps
 * do: the CPU floor of a refusal (scripts/bench/open-loop.ts).
 */
export async function floorRefusalShape(): Promise<void> {
  await local.step();
  const deadline = new CancellationScope();
  void deadline.run(() => sleep('30 minutes')).catch(() => undefined);
  await step();
  upsertSearchAttributes([{ key: CreatePhaseKey, value: 'waiting_for_ip' }]);
  try {
    await refuse();
  } catch {
    deadline.cancel();
    upsertSearchAttributes([
      { key: CreatePhaseKey, value: 'compensating' },
      { key: FailureCodeKey, value: 'invalid_request' },
    ]);
    await local.step();
    await step();
    await local.step();
    upsertSearchAttributes([{ key: CreatePhaseKey, value: 'finished' }]);
    throw ApplicationFailure.nonRetryable('refused', 'InvalidRequest');
  }
}
