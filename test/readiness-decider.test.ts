/**
 * The readiness decider's own rules (src/verdict/readiness-decider.ts; docs/architecture.md,
 * "Waiting costs nothing"): a change of a pod whose wait this worker does not hold is decided
 * only after `otherWaitDelayMs`, from the caches then; a pod decided once costs no Temporal call
 * on its later changes; a pod naming another create's workflow cannot decide that create's wait.
 *
 * Real dev server and simulated cluster over HTTP; the decider under test runs over informers
 * of its own and a Temporal client behind the gRPC counter (test/support/grpc-counter.ts), so
 * its completion calls are counted by what reached the server. The waits are the create
 * workflow's, or the harness's wait scheduled on a queue no worker polls
 * (test/support/harness-workflows.ts), which only a completion by id can decide.
 */
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadinessDecider } from '../src/verdict/readiness-decider.js';
import { DEFAULT_TEMPLATES } from '../src/config/index.js';
import { createPod } from '../src/kubernetes/pods.js';
import { SandboxInformers } from '../src/kubernetes/sandbox-informers.js';
import { podWithUnstartedWait, startCreate, waitingAsync } from './support/creates.js';
import { startGrpcCounter, type GrpcCounter } from './support/grpc-counter.js';
import { eventTimeMs } from './support/history-event-time.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

const NAMESPACE = 'sandboxes';
const COMPLETED = 'RespondActivityTaskCompletedById';
const FAILED = 'RespondActivityTaskFailedById';
const { PendingActivityState, EventType } = temporal.api.enums.v1;

let stack: TestStack | undefined;
let counted: { counter: GrpcCounter; connection: Connection } | undefined;
let decider: ReadinessDecider | undefined;
let informers: SandboxInformers | undefined;
afterEach(async () => {
  await decider?.stop();
  await informers?.stop();
  await counted?.connection.close();
  await counted?.counter.close();
  await stack?.stop();
  stack = counted = decider = informers = undefined;
});

/**
 * A stack and a decider under test with informers of its own and a counted Temporal client;
 * resolves once its informers have listed. The stack's worker runs the workflows and their
 * activities, but its own decider decides no change of a wait it does not hold within the test
 * (its `otherWaitDelayMs` is an hour), nor reconciles.
 */
async function startDecider(options: { otherWaitDelayMs: number }) {
  stack = await startTestStack({
    cluster: { startupDelayMs: 100 },
    reconcileIntervalMs: 3_600_000,
    decider: { otherWaitDelayMs: 3_600_000 },
  });
  stack.cluster.faults.neverReady(true);
  const counter = await startGrpcCounter(stack.temporal.address);
  const connection = await Connection.connect({ address: counter.address });
  counted = { counter, connection };
  informers = new SandboxInformers({
    client: stack.kubernetes,
    retryDelayMs: 100,
    watchTimeoutSeconds: 25,
  });
  decider = new ReadinessDecider({
    informers,
    store: stack.store,
    client: new Client({ connection, namespace: 'default' }),
    otherWaitDelayMs: options.otherWaitDelayMs,
    // No reconcile may decide in the decider's stead.
    reconcileIntervalMs: 3_600_000,
  });
  decider.start();
  informers.start();
  const watching = informers;
  await waitUntil(() => watching.synced, { timeoutMs: 60_000, what: 'the informers synced' });
  return { stack, counter, informers: watching };
}

/** {@link podWithUnstartedWait} on this suite's stack. */
const unstartedWait = (workflowId: string) => podWithUnstartedWait(stack as TestStack, workflowId);

/** The states of a workflow's pending activities, as Temporal reports them. */
async function pendingStates(handle: WorkflowHandle) {
  const { raw } = await handle.describe();
  return (raw.pendingActivities ?? []).map((activity) => ({
    activityId: activity.activityId,
    state: PendingActivityState[activity.state ?? 0],
  }));
}

describe('the readiness decider', () => {
  it('decides a change of a wait this worker does not hold only after otherWaitDelayMs, from the caches then', async () => {
    const otherWaitDelayMs = 5_000;
    const { stack, counter, informers } = await startDecider({ otherWaitDelayMs });
    const { pod, handle } = await unstartedWait(`op_deferred_${Date.now()}`);

    // The pod fails: a decisive change of a wait no activity of this worker holds. Then, while
    // that change waits its delay, the pod runs with an IP (a real pod does not come back from
    // Failed; the simulated node lets the test say which of the two the decision used).
    const changedAt = Date.now();
    stack.cluster.node.failPod(NAMESPACE, pod.name, 'Evicted');
    await waitUntil(() => informers.cachedPod(pod.name)?.status?.phase === 'Failed');
    stack.cluster.node.makeReady(NAMESPACE, pod.name);
    await waitUntil(() => Boolean(informers.cachedPod(pod.name)?.status?.podIP));
    // Both changes are seen, and nothing is decided yet: no call, the wait still scheduled.
    expect([counter.count(COMPLETED), counter.count(FAILED)], 'calls before the delay').toEqual([
      0, 0,
    ]);
    expect(await pendingStates(handle)).toEqual([
      expect.objectContaining({ state: 'PENDING_ACTIVITY_STATE_SCHEDULED' }),
    ]);

    // Decided once, after the delay, by what the caches held then: the IP, not the failure.
    const { podIp } = await handle.result();
    expect(podIp).toBe(informers.cachedPod(pod.name)?.status?.podIP);
    expect([counter.count(COMPLETED), counter.count(FAILED)], 'calls after the delay').toEqual([
      1, 0,
    ]);
    const completed = ((await handle.fetchHistory()).events ?? []).find(
      (event) => event.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    );
    const completedAt = eventTimeMs(completed);
    expect(completedAt - changedAt, 'ms from the change to the decision').toBeGreaterThanOrEqual(
      otherWaitDelayMs - 100,
    );
  }, 120_000);

  it('a pod decided once costs no Temporal call on its later changes (terminating, deleted)', async () => {
    const { stack, counter, informers } = await startDecider({ otherWaitDelayMs: 200 });
    const decided = await unstartedWait(`op_memo_${Date.now()}`);
    stack.cluster.node.makeReady(NAMESPACE, decided.pod.name);
    expect((await decided.handle.result()).podIp).toMatch(/^10\./);
    expect(counter.count(COMPLETED)).toBe(1);

    // Later decisive changes of the decided pod: a graceful delete, then its end.
    stack.cluster.node.markTerminating(NAMESPACE, decided.pod.name);
    await waitUntil(() =>
      Boolean(informers.cachedPod(decided.pod.name)?.metadata?.deletionTimestamp),
    );
    await stack.kubernetes.core.deleteNamespacedPod({
      name: decided.pod.name,
      namespace: NAMESPACE,
      gracePeriodSeconds: 0,
    });
    await waitUntil(() => !informers.cachedPod(decided.pod.name));
    // A change of another pod after them, deferred as long: its call comes after any of theirs.
    const later = await unstartedWait(`op_memo_later_${Date.now()}`);
    stack.cluster.node.makeReady(NAMESPACE, later.pod.name);
    expect((await later.handle.result()).podIp).toMatch(/^10\./);
    await waitUntil(() => counter.count(COMPLETED) >= 2);
    expect(
      { completed: counter.count(COMPLETED), failed: counter.count(FAILED) },
      "completion calls: one per pod, none for the decided pod's later changes",
    ).toEqual({ completed: 2, failed: 0 });
  }, 120_000);

  it("a pod whose operation-id annotation names another create's workflow does not decide that create's wait", async () => {
    const { stack, counter } = await startDecider({ otherWaitDelayMs: 200 });
    const victim = await startCreate(stack, { diskMib: 2048, deadlineMs: 300_000 });
    const victimPod = await waitingAsync(stack, victim.handle, victim.input.sandboxId);
    const waitBefore = await pendingStates(victim.handle);

    // A pod of another sandbox, annotated with the victim's workflow id, gets an IP.
    const forged = await createPod(stack.kubernetes, {
      operationId: victim.input.operationId,
      sandboxId: `sbx_forged_${Date.now()}`,
      generation: 1,
      template: 'base',
      image: DEFAULT_TEMPLATES.base?.image ?? '',
      resources: { cpu: 1, memoryMib: 512, diskMib: 2048 },
    });
    stack.cluster.node.makeReady(NAMESPACE, forged.name);
    // The decider completed by id the wait the forged pod names: its own uid's, which no
    // workflow has (NotFound). The victim's wait is untouched.
    await waitUntil(() => counter.count(COMPLETED) >= 1);
    expect((await victim.handle.describe()).status.name).toBe('RUNNING');
    expect(await pendingStates(victim.handle)).toEqual(waitBefore);

    // The victim's own pod still decides it, with its own IP.
    stack.cluster.node.makeReady(NAMESPACE, victimPod);
    const result = await victim.handle.result();
    const forgedIp = (
      await stack.kubernetes.core.readNamespacedPod({
        name: forged.name,
        namespace: NAMESPACE,
      })
    ).status?.podIP;
    expect(result.pod.ip).toMatch(/^10\./);
    expect(result.pod.ip).not.toBe(forgedIp);
  }, 180_000);
});
