/**
 * "Waiting costs nothing" (docs/architecture.md): a waiting create holds no activity slot and
 * sends no heartbeat, any worker decides it, a cancel and the deadline still reach compensation
 * at once. Real dev server, workers with the real activities, the simulated cluster over HTTP.
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import type { createSandbox } from '../src/workflows/create-sandbox.js';
import { podWithUnstartedWait, startCreate, settle, waitingAsync } from './support/creates.js';
import { eventTimeMs } from './support/history-event-time.js';
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

function podDeletesOf(podName: string) {
  return (stack as TestStack).cluster.requestsWhere({
    verb: 'delete',
    resource: 'pods',
    name: podName,
  });
}

function applicationFailureOf(error: unknown): ApplicationFailure {
  expect(error).toBeInstanceOf(WorkflowFailedError);
  const cause = (error as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}

/** The history events of the create's readiness wait activity, by type. */
async function waitActivityEvents(handle: CreateHandle) {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find(
    (event) =>
      event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED &&
      event.activityTaskScheduledEventAttributes?.activityType?.name === 'awaitPodReady',
  );
  const scheduledId = scheduled?.eventId?.toString();
  const ofWait = events.filter((event) => {
    const attributes =
      event.activityTaskStartedEventAttributes ??
      event.activityTaskCompletedEventAttributes ??
      event.activityTaskFailedEventAttributes ??
      event.activityTaskTimedOutEventAttributes;
    return attributes?.scheduledEventId?.toString() === scheduledId;
  });
  return { scheduled, started: ofWait.filter((e) => e.activityTaskStartedEventAttributes), ofWait };
}

describe('waiting costs nothing', () => {
  it('a wait holds no slot and sends no heartbeat: the server saw none while it waited', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    // A sleep: that no heartbeat came is what is proved; longer than three heartbeats of the
    // former design (one every 2 s).
    await new Promise((resolve) => setTimeout(resolve, 7_000));
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    expect(pending.map((activity) => activity.activityType?.name)).toEqual(['awaitPodReady']);
    const [wait] = pending;
    expect(wait?.state).toBe(
      temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_STARTED,
    );
    expect(wait?.lastHeartbeatTime ?? null).toBeNull();
    expect(wait?.heartbeatDetails?.payloads ?? []).toHaveLength(0);
    expect(wait?.attempt).toBe(1);
    // Scheduled without a heartbeat timeout, and the worker runs no activity while it waits.
    const { scheduled } = await waitActivityEvents(handle);
    expect(
      Number(scheduled?.activityTaskScheduledEventAttributes?.heartbeatTimeout?.seconds ?? 0),
    ).toBe(0);
    expect(stack.worker?.getStatus().numInFlightActivities).toBe(0);

    stack.cluster.node.makeReady(NAMESPACE, podName);
    const result = await handle.result();
    expect(result.pod.ip).toMatch(/^10\./);
    expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);
  }, 120_000);

  it('a wait started by a worker that stopped is decided by another: a refusal recorded while no worker ran fails it when the next one starts', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    const cluster = stack.cluster;
    cluster.faults.neverReady(true);
    const refused = await startCreate(stack, { diskMib: 2048, deadlineMs: 300_000 });
    const ready = await startCreate(stack, { diskMib: 2048, deadlineMs: 300_000 });
    const refusedPod = await waitingAsync(
      stack as TestStack,
      refused.handle,
      refused.input.sandboxId,
    );
    const readyPod = await waitingAsync(stack as TestStack, ready.handle, ready.input.sandboxId);

    // Worker A (and its informers) stop: nothing watches the cluster any more.
    const first = stack.worker as NonNullable<TestStack['worker']>;
    first.shutdown();
    await waitUntil(() => first.getState() === 'STOPPED' && cluster.openWatches() === 0, {
      timeoutMs: 60_000,
    });
    cluster.node.recordSandboxFailure(NAMESPACE, refusedPod, INVALID_ARGUMENT_MESSAGE);
    // A sleep: that nothing decides the wait while no worker runs is what is proved.
    await new Promise((resolve) => setTimeout(resolve, 2_000));
    expect((await refused.handle.describe()).status.name).toBe('RUNNING');

    // Worker B starts: its informers list, and the refusal recorded meanwhile is decided.
    const resumed = Date.now();
    await stack.startWorker();
    const failure = applicationFailureOf((await settle(refused.handle.result())).error);
    expect(failure.type).toBe('InvalidRequest');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('cloned rootfs size 451 MiB');
    expect(failure.details?.[0]).toMatchObject({ code: 'invalid_request', rootfsMib: 451 });
    expect(Date.now() - resumed).toBeLessThan(30_000);
    // The attempt worker A started was the one decided: no retry, no timeout.
    const refusedWait = await waitActivityEvents(refused.handle);
    expect(refusedWait.started).toHaveLength(1);
    expect(
      refusedWait.ofWait.filter((event) => event.activityTaskFailedEventAttributes),
    ).toHaveLength(1);

    // B's informers also decide a change that happens while B runs.
    cluster.node.makeReady(NAMESPACE, readyPod);
    const result = await ready.handle.result();
    expect(result.pod.ip).toMatch(/^10\./);
    expect((await waitActivityEvents(ready.handle)).started).toHaveLength(1);
    expect(await stack.store.getSandboxById(ready.input.sandboxId)).toMatchObject({
      state: 'running',
    });
    expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);
  }, 240_000);

  it('a wait whose attempt never started is decided by id: the pod names its workflow, no record is read', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.neverReady(true);
    const workflowId = `op_unstarted_${Date.now()}`;
    // No worker polls the wait's queue: the attempt stays scheduled, never started.
    const { pod, handle } = await podWithUnstartedWait(stack, workflowId);
    const [scheduled] = (await handle.describe()).raw.pendingActivities ?? [];
    expect(scheduled?.state).toBe(
      temporal.api.enums.v1.PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED,
    );

    stack.cluster.node.makeReady(NAMESPACE, pod.name);
    expect((await handle.result()).podIp).toMatch(/^10\./);
    const events = (await handle.fetchHistory()).events ?? [];
    const started = events.filter((event) => event.activityTaskStartedEventAttributes);
    expect(started.map((event) => event.activityTaskStartedEventAttributes?.attempt)).toEqual([1]);
    expect(events.some((event) => event.activityTaskCompletedEventAttributes)).toBe(true);
  }, 120_000);

  it('a cancel during the wait reaches compensation (the pod delete) within 2 s', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    const cancelledAt = Date.now();
    await handle.cancel();
    await waitUntil(() => podDeletesOf(podName).length > 0, { timeoutMs: 60_000 });
    const toCompensationMs = Date.now() - cancelledAt;
    console.log(`cancel -> pod DELETE in ${toCompensationMs} ms`);
    expect(toCompensationMs).toBeLessThan(2_000);
    const { error } = await settle(handle.result());
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'cancelled' },
    });
    expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);
  }, 120_000);

  it('the deadline fires on time during the wait and compensation follows at once', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.neverReady(true);
    const deadlineMs = 8_000;
    const { handle, input } = await startCreate(stack, { diskMib: 2048, deadlineMs });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    const failure = applicationFailureOf((await settle(handle.result())).error);
    expect(failure.type).toBe('PodNeverReady');
    const events = (await handle.fetchHistory()).events ?? [];
    const timeOf = (type: number) =>
      eventTimeMs(events.find((candidate) => candidate.eventType === type));
    const startedAt = timeOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED);
    const firedAt = timeOf(EventType.EVENT_TYPE_TIMER_FIRED);
    // The timer fires at the deadline (the dev server's timer resolution is about 1 s).
    expect(firedAt - startedAt).toBeGreaterThanOrEqual(deadlineMs - 100);
    expect(firedAt - startedAt).toBeLessThan(deadlineMs + 2_000);
    // Compensation (the pod delete) starts within 2 s of the timer, not at the wait's backstop.
    const deletes = podDeletesOf(podName);
    expect(deletes).toHaveLength(1);
    const closedAt = timeOf(EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED);
    expect(closedAt - firedAt).toBeLessThan(5_000);
  }, 120_000);

  it('more waiting creates than activity slots block neither a new create nor a compensation', async () => {
    const slots = 2;
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      maxConcurrentActivities: slots,
      learnRootfsFloors: false,
    });
    stack.cluster.faults.neverReady(true);
    const waiting = [];
    for (let i = 0; i < slots * 3; i += 1)
      waiting.push(await startCreate(stack, { diskMib: 2048 }));
    const podNames = [];
    for (const create of waiting)
      podNames.push(await waitingAsync(stack as TestStack, create.handle, create.input.sandboxId));
    expect(stack.worker?.getStatus().numInFlightActivities).toBe(0);

    // A new create runs createPod, is refused by the node and compensates.
    stack.cluster.faults.neverReady(false);
    const refused = await startCreate(stack, { diskMib: 300 });
    const failure = applicationFailureOf((await settle(refused.handle.result())).error);
    expect(failure.type).toBe('InvalidRequest');
    expect(await stack.store.getSandboxById(refused.input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'invalid_request' },
    });

    // A cancelled waiting create compensates (deletePod, then the retirement).
    const [first] = waiting;
    await first?.handle.cancel();
    const { error } = await settle(first!.handle.result());
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(podDeletesOf(podNames[0] ?? '')).toHaveLength(1);

    // The others still wait, and are decided when their pods get an IP.
    for (const name of podNames.slice(1)) stack.cluster.node.makeReady(NAMESPACE, name);
    for (const create of waiting.slice(1)) {
      expect((await create.handle.result()).pod.ip).toMatch(/^10\./);
    }
  }, 240_000);
});
