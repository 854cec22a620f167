/**
 * The asynchronous readiness wait under attack (docs/architecture.md, "Waiting costs nothing"):
 * a store that fails while a decision is made, two workers deciding one wait, a decision that
 * lands after the workflow moved on, a refusal before the wait began. Real dev server, workers
 * with the real activities and deciders, the simulated cluster over HTTP; the store is the real
 * one, wrapped only to fail every call for a while.
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadinessDecider } from '../src/verdict/readiness-decider.js';
import { SandboxInformers } from '../src/kubernetes/sandbox-informers.js';
import type { Store } from '../src/store/index.js';
import type { createSandbox } from '../src/workflows/create-sandbox.js';
import { settle, startCreate, waitingAsync } from './support/creates.js';
import { failingStore } from './support/failing-store.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

const NAMESPACE = 'sandboxes';
const INVALID_ARGUMENT_MESSAGE =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
  'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';
const EventType = temporal.api.enums.v1.EventType;

type CreateHandle = WorkflowHandle<typeof createSandbox>;

let stack: TestStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** Every method of the store but `close`: what a store that is down fails. */
function methodsOf(store: Store): Array<keyof Store> {
  return (Object.keys(store) as Array<keyof Store>).filter(
    (name) => typeof store[name] === 'function' && name !== 'close',
  );
}

/** The close events (completed, failed, timed out, cancelled) of the create's wait attempts. */
async function waitCloseEvents(handle: CreateHandle) {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'awaitPodReady',
  );
  const id = scheduled?.eventId?.toString();
  return {
    events,
    closes: events.filter((event) => {
      const attributes =
        event.activityTaskCompletedEventAttributes ??
        event.activityTaskFailedEventAttributes ??
        event.activityTaskTimedOutEventAttributes ??
        event.activityTaskCanceledEventAttributes;
      return attributes?.scheduledEventId?.toString() === id;
    }),
  };
}

function applicationFailureOf(error: unknown): ApplicationFailure {
  expect(error).toBeInstanceOf(WorkflowFailedError);
  const cause = (error as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}

describe('the asynchronous readiness wait under attack', () => {
  it('a refusal seen while the store is unreachable is decided at once: deciding a wait reads no store', async () => {
    const down = { on: false };
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      activityStore: (store) => failingStore(methodsOf(store), down)(store),
      // Longer than the test: no reconcile may rescue the decision.
      reconcileIntervalMs: 3_600_000,
    });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048, deadlineMs: 600_000 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);

    down.on = true;
    stack.cluster.node.recordSandboxFailure(NAMESPACE, podName, INVALID_ARGUMENT_MESSAGE);
    // The wait is failed while every store call still fails (compensation then waits for it).
    await waitUntil(async () => (await waitCloseEvents(handle)).closes.length > 0, {
      timeoutMs: 30_000,
    }).catch(() => {
      throw new Error('the refusal was not decided within 30 s while the store was unreachable');
    });
    expect((await waitCloseEvents(handle)).closes.map((event) => event.eventType)).toEqual([
      EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    ]);
    down.on = false;
    const failure = applicationFailureOf((await settle(handle.result())).error);
    expect(failure.type).toBe('InvalidRequest');
    expect(failure.message).toContain('cloned rootfs size 451 MiB');
  }, 240_000);

  it('two workers deciding one wait: one completion is recorded, the other answer (NotFound) is dropped quietly', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    // A second worker's decider and informers (a worker of its own may not share this process's
    // task queue: the SDK refuses two on one queue), over the same store and Temporal.
    const informers = new SandboxInformers({
      client: stack.kubernetes,
      retryDelayMs: 100,
      watchTimeoutSeconds: 25,
    });
    const warnings: string[] = [];
    const other = new ReadinessDecider({
      informers,
      store: stack.store,
      client: stack.temporal.client,
      logger: { warn: (_fields, message) => warnings.push(message) },
    });
    other.start();
    informers.start();
    try {
      stack.cluster.faults.neverReady(true);
      const { handle, input } = await startCreate(stack, { diskMib: 2048 });
      const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
      await waitUntil(() => informers.synced, { timeoutMs: 60_000 });
      stack.cluster.node.makeReady(NAMESPACE, podName);
      expect((await handle.result()).pod.ip).toMatch(/^10\./);
      const { closes } = await waitCloseEvents(handle);
      expect(closes.map((event) => event.eventType)).toEqual([
        EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
      ]);
      await other.stop();
      expect(warnings).toEqual([]);
      expect(stack.warnings.filter((line) => String(line.msg).includes('could not be'))).toEqual(
        [],
      );
      expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);
    } finally {
      await other.stop();
      await informers.stop();
    }
  }, 180_000);

  it('a decision that lands after a cancel (compensation deleted the pod) changes nothing', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    // Compensation deletes the pod; the deciders then fail the wait the workflow already
    // cancelled (pod deleted before an IP).
    await handle.cancel();
    const { error } = await settle(handle.result());
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    const { events, closes } = await waitCloseEvents(handle);
    console.log(
      'late decision:',
      closes.map((event) => EventType[event.eventType ?? 0]),
    );
    const taskFailures = events.filter(
      (event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
    );
    // A late event may land in the last workflow task (UnhandledCommand, Temporal's rule); a
    // workflow task failed for anything else (a non-determinism, a throw) is a bug.
    for (const event of taskFailures) {
      expect(event.workflowTaskFailedEventAttributes?.cause).toBe(
        temporal.api.enums.v1.WorkflowTaskFailedCause.WORKFLOW_TASK_FAILED_CAUSE_UNHANDLED_COMMAND,
      );
    }
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'cancelled' },
    });
    expect(
      stack.cluster.requestsWhere({ verb: 'delete', resource: 'pods', name: podName }),
    ).toHaveLength(1);
    expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);
  }, 180_000);

  it('a refusal that arrives before the wait starts decides it once, by the attempt or by id', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 }, learnRootfsFloors: false });
    // The node's refusal comes 100 ms after binding: before, or as, the wait is scheduled.
    const { handle } = await startCreate(stack, { diskMib: 300 });
    const failure = applicationFailureOf((await settle(handle.result())).error);
    expect(failure.type).toBe('InvalidRequest');
    expect(failure.message).toContain('cloned rootfs size 451 MiB');
    const { closes } = await waitCloseEvents(handle);
    expect(closes.map((event) => event.eventType)).toEqual([
      EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    ]);
    expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);
  }, 180_000);
});
