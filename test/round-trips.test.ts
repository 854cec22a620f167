/**
 * "Round trips per create" (docs/architecture.md): what one create costs Temporal, read from
 * what the server recorded and counted. The workflow tasks, activity tasks and local activities
 * come from the create's real history; whether an activity task was handed to the worker in the
 * answer to the workflow task that scheduled it (eager dispatch) or went through the task queue
 * comes from the dev server's own metrics for the suite's task queue. Real dev server, the real
 * activities, the simulated cluster over HTTP.
 */
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { startCreate, settle } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

const EventType = temporal.api.enums.v1.EventType;

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ cluster: { startupDelayMs: 100 }, learnRootfsFloors: false });
});
afterAll(async () => {
  await stack?.stop();
});

/** What a create's history says it cost. */
interface HistoryCost {
  workflowTasks: number;
  activityTasks: string[];
  localActivities: number;
  /** `core_patch` markers and the SDK's `TemporalChangeVersion` upserts that go with them. */
  patchEvents: number;
}

async function historyCost(diskMib: number): Promise<HistoryCost> {
  const { handle } = await startCreate(stack, { diskMib });
  await settle(handle.result());
  const events = (await handle.fetchHistory()).events ?? [];
  return {
    workflowTasks: events.filter(
      (e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
    ).length,
    activityTasks: events
      .filter((e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED)
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? ''),
    localActivities: events.filter(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    ).length,
    patchEvents: events.filter(
      (e) =>
        e.markerRecordedEventAttributes?.markerName === 'core_patch' ||
        e.upsertWorkflowSearchAttributesEventAttributes?.searchAttributes?.indexedFields?.[
          'TemporalChangeVersion'
        ] !== undefined,
    ).length,
  };
}

/**
 * A counter of the dev server's Prometheus metrics, summed over the series of this suite's task
 * queue (the server's `taskqueue` label spells `-` as `_`).
 */
async function serverCounter(name: string): Promise<number> {
  const text = await (await fetch(inject('temporalMetricsUrl'))).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!line.includes(`taskqueue="${stack.taskQueue.replace(/-/g, '_')}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

/**
 * Resolves once the server's count of eagerly dispatched activity tasks of this queue reaches
 * `count` (the server publishes its metrics every second or so), then reads it once more.
 */
async function eagerDispatches(count: number): Promise<number> {
  await waitUntil(async () => (await serverCounter('activity_eager_execution')) >= count, {
    timeoutMs: 30_000,
  }).catch(() => undefined);
  return serverCounter('activity_eager_execution');
}

describe('round trips per create', () => {
  // One test, in order: the server's counter is per task queue and cumulative.
  it('a refusal: 4 workflow tasks, 3 activity tasks handed out eagerly, 2 local activities; a success: 4 workflow tasks, 3 activity tasks handed out eagerly, 1 local activity', async () => {
    const refusal = await historyCost(300);
    expect(refusal).toEqual({
      workflowTasks: 4,
      activityTasks: ['createPod', 'awaitPodReady', 'deletePod'],
      // admitCreate, retireExecution: the outcome was recorded at the decision
      // (src/verdict/outcome-at-decision.ts), so no recordOperationOutcome
      localActivities: 2,
      // the patches were retired (docs/testing.md, "Patch exit plan")
      patchEvents: 0,
    });
    expect(await eagerDispatches(3)).toBe(3);

    const success = await historyCost(2048);
    expect(success).toEqual({
      workflowTasks: 4,
      activityTasks: ['createPod', 'awaitPodReady', 'markSandboxRunning'],
      // admitCreate, inside the first workflow task
      localActivities: 1,
      patchEvents: 0,
    });
    expect(await eagerDispatches(6)).toBe(6);
  });
});
