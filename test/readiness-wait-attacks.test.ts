/**
 * The asynchronous readiness wait under attack (docs/architecture.md, "Waiting costs nothing"):
 * a store that fails while a decision is made, a create whose workflow Temporal no longer
 * knows, two workers deciding one wait, a decision that lands after the workflow moved on.
 * Real dev server, workers with the real activities and deciders, the simulated cluster over
 * HTTP; the store is the real one, wrapped only to fail some calls for a while.
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadinessDecider } from '../activities/readiness-decider.js';
import { SandboxInformers } from '../kubernetes/sandbox-informers.js';
import type { Store } from '../store/index.js';
import type { createSandbox } from '../workflows/create-sandbox.js';
import { settle, startCreate, storeGoneCreate, waitingAsync } from './support/creates.js';
import { failingStore } from './support/failing-store.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { until } from './support/until.js';

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

/** Whether the workflow has closed (the server's describe). */
async function closed(handle: CreateHandle): Promise<boolean> {
  return (await handle.describe()).status.name !== 'RUNNING';
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
  it('a refusal seen while the store is unreachable is decided within seconds of its return, not at the next periodic reconcile', async () => {
    const down = { on: false };
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      activityStore: failingStore(['findReadinessWait', 'listReadinessWaits'], down),
      // Longer than the test: only the decider's own retry may rescue the decision.
      reconcileIntervalMs: 3_600_000,
    });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048, deadlineMs: 600_000 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);

    down.on = true;
    stack.cluster.node.recordSandboxFailure(NAMESPACE, podName, INVALID_ARGUMENT_MESSAGE);
    await until(
      () => stack!.warnings.some((line) => String(line.msg).includes('could not be read')),
      60_000,
    );
    // Longer than the decider's first retry (1 s): it fails too.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(await closed(handle)).toBe(false);
    down.on = false;

    await until(() => closed(handle), 30_000).catch(() => {
      throw new Error('the refusal was not decided within 30 s of the store coming back');
    });
    const failure = applicationFailureOf((await settle(handle.result())).error);
    expect(failure.type).toBe('InvalidRequest');
    expect(failure.message).toContain('cloned rootfs size 451 MiB');
  }, 240_000);

  it('creates whose workflows Temporal no longer knows do not stop the check for unrecorded waits', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.neverReady(true);
    // A full page (the check reads 100) of creates left waiting for an IP whose workflows are
    // gone (terminated, then past the namespace's retention): describing one answers NotFound.
    // They are older than the create that matters.
    for (let i = 0; i < 100; i += 1) await storeGoneCreate(stack.store, i);

    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    // As if its worker had died between taking the task and recording the wait: no row.
    const [lost] = await stack.store.listReadinessWaits();
    expect(await stack.store.clearReadinessWait(lost?.podUid ?? '', lost?.taskToken ?? '')).toBe(
      true,
    );
    await until(async () => {
      const [again] = await stack!.store.listReadinessWaits();
      return again !== undefined && again.taskToken !== lost?.taskToken;
    }, 90_000).catch(() => {
      throw new Error('the lost wait was never retried (WaitNotRecorded) within 90 s');
    });
    const [pending] = (await handle.describe()).raw.pendingActivities ?? [];
    expect(pending?.lastFailure?.applicationFailureInfo?.type).toBe('WaitNotRecorded');
    stack.cluster.node.makeReady(NAMESPACE, podName);
    expect((await handle.result()).pod.ip).toMatch(/^10\./);
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
      await until(() => informers.synced, 60_000);
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
      expect(await stack.store.listReadinessWaits()).toEqual([]);
    } finally {
      await other.stop();
      await informers.stop();
    }
  }, 180_000);

  it('a decision that lands after a cancel (its row outlived the outcome write) changes nothing', async () => {
    const down = { on: false };
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      activityStore: failingStore(['recordOperationOutcome'], down),
    });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    // The outcome write fails, so the wait's row stays while compensation deletes the pod; the
    // decider then fails the wait the workflow already cancelled (pod deleted before an IP).
    down.on = true;
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
      stack.cluster.requests.filter(
        (request) => request.method === 'DELETE' && request.path.endsWith(`/pods/${podName}`),
      ),
    ).toHaveLength(1);
    expect(await stack.store.listReadinessWaits()).toEqual([]);
  }, 180_000);

  it('a refusal that arrives before the wait is recorded is found in the caches by the wait itself', async () => {
    const slow = { on: true };
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      learnRootfsFloors: false,
      // The wait records itself 3 s late: the node's refusal (100 ms after binding) comes first,
      // and the deciders find no row for it.
      activityStore: (store) =>
        Object.assign(Object.create(store) as Store, {
          recordReadinessWait: async (wait: Parameters<Store['recordReadinessWait']>[0]) => {
            if (slow.on) await new Promise((resolve) => setTimeout(resolve, 3_000));
            return store.recordReadinessWait(wait);
          },
        }),
    });
    const { handle } = await startCreate(stack, { diskMib: 300 });
    const failure = applicationFailureOf((await settle(handle.result())).error);
    expect(failure.type).toBe('InvalidRequest');
    expect(failure.message).toContain('cloned rootfs size 451 MiB');
    // Decided by the attempt that recorded it: one close, and no decider failed the wait.
    const { closes } = await waitCloseEvents(handle);
    expect(closes.map((event) => event.eventType)).toEqual([
      EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    ]);
    expect(stack.logs.filter((line) => String(line.msg).endsWith('; wait failed'))).toEqual([]);
    expect(await stack.store.listReadinessWaits()).toEqual([]);
  }, 180_000);

  it('a wait that cannot be recorded (store unreachable) is retried until it is, then decided', async () => {
    const down = { on: true };
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      activityStore: failingStore(['recordReadinessWait'], down),
    });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    await until(async () => {
      const [wait] = (await handle.describe()).raw.pendingActivities ?? [];
      return wait?.activityType?.name === 'awaitPodReady' && (wait.attempt ?? 0) >= 2;
    }, 90_000);
    down.on = false;
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    stack.cluster.node.makeReady(NAMESPACE, podName);
    expect((await handle.result()).pod.ip).toMatch(/^10\./);
    expect(await stack.store.listReadinessWaits()).toEqual([]);
  }, 180_000);
});
