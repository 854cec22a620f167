/**
 * The createSandbox workflow end to end: real dev server, a worker with the real activities,
 * the simulated cluster over HTTP and a SQLite store.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import type { RequestQuery } from '../environments/simulated-cluster/index.js';
import { FailureCodeKey, CreatePhaseKey } from '../src/temporal/search-attribute-keys.js';
import { freePort } from '../src/process/free-port.js';
import { startCreate, settle } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

const NAMESPACE = 'sandboxes';
const INVALID_ARGUMENT_MESSAGE =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
  'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';

let stack: TestStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

const requestsWhere = (query: RequestQuery) => (stack as TestStack).cluster.requestsWhere(query);
const podDeletes = () => requestsWhere({ verb: 'delete', resource: 'pods' });
const podCreates = () => requestsWhere({ verb: 'create', resource: 'pods' });
const podLists = () => requestsWhere({ verb: 'list', resource: 'pods' });

/** Resolves once the create's phase is `waiting_for_ip` (its readiness wait is scheduled). */
async function waitingForIp(handle: {
  describe(): Promise<{ typedSearchAttributes: { get(key: typeof CreatePhaseKey): unknown } }>;
}): Promise<void> {
  await waitUntil(
    async () =>
      (await handle.describe()).typedSearchAttributes.get(CreatePhaseKey) === 'waiting_for_ip',
    { timeoutMs: 90_000 },
  );
}

function applicationFailureOf(error: unknown): ApplicationFailure {
  expect(error).toBeInstanceOf(WorkflowFailedError);
  const cause = (error as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}

describe('createSandbox workflow', () => {
  it('fails as InvalidRequest within seconds when the node refuses the disk, and compensates', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    const started = Date.now();
    const { handle, input } = await startCreate(stack, { diskMib: 300 });
    const { error } = await settle(handle.result());
    const elapsedMs = Date.now() - started;

    const failure = applicationFailureOf(error);
    expect(failure.type).toBe('InvalidRequest');
    expect(failure.nonRetryable).toBe(true);
    expect(failure.message).toContain('cloned rootfs size 451 MiB');
    expect(failure.details?.[0]).toMatchObject({
      code: 'invalid_request',
      reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
    });
    expect(elapsedMs).toBeLessThan(20_000);

    expect(podDeletes()).toHaveLength(1);
    expect(podDeletes()[0]?.status).toBe(200);
    const sandbox = await stack.store.getSandboxById(input.sandboxId);
    expect(sandbox).toMatchObject({
      state: 'failed',
      failure: { code: 'invalid_request', message: expect.stringContaining('451 MiB') },
    });
    // Retired: a second retirement of the same execution is a no-op.
    expect(
      await stack.store.retireExecution({
        sandboxId: input.sandboxId,
        generation: 1,
        attempt: 1,
        reason: 'again',
        failure: { code: 'internal', message: 'x' },
      }),
    ).toEqual({ retired: false });
    const description = await handle.describe();
    expect(description.typedSearchAttributes.get(FailureCodeKey)).toBe('invalid_request');
    expect(description.typedSearchAttributes.get(CreatePhaseKey)).toBe('finished');
    console.log(`InvalidRequest create: start -> workflow failed in ${elapsedMs} ms`);

    // Every log line of this create names the operation, the sandbox and (once known) the pod.
    const lines = stack.logs.filter((line) => line.operation_id === input.operationId);
    expect(lines.map((line) => line.msg)).toEqual(
      expect.arrayContaining([
        'pod created',
        // Decided in the wait activity itself, or by the decider once the wait was recorded
        // (docs/architecture.md, "Waiting costs nothing").
        expect.stringMatching(/^node refused the pod as invalid/),
        'pod deleted (compensation)',
        'execution retired',
      ]),
    );
    const podUid = lines.find((line) => line.msg === 'pod created')?.pod_uid;
    expect(podUid).toEqual(expect.any(String));
    for (const line of lines) {
      expect(line).toMatchObject({ sandbox_id: input.sandboxId, pod_uid: podUid });
    }
  });

  it('fails as PodNeverReady at the deadline when the node refuses as Unavailable', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.refuseWith('Unavailable', 'failed to reserve sandbox name');
    const started = Date.now();
    const { handle, input } = await startCreate(stack, { diskMib: 300, deadlineMs: 3_000 });
    const { error } = await settle(handle.result());
    const failure = applicationFailureOf(error);
    expect(failure.type).toBe('PodNeverReady');
    expect(failure.message).toMatch(/had no IP within the create deadline of 3 s/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2_900);
    expect(podDeletes()).toHaveLength(1);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'pod_never_ready' },
    });
    // Only the worker's two informers watch; the wait held none of its own.
    expect(stack.cluster.openWatches()).toBe(2);
  });

  it('still fails as InvalidRequest when the events watch re-opens into a 429, after its Retry-After', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    const cluster = stack.cluster;
    await waitUntil(() => cluster.openWatches('events') === 1);
    cluster.faults.failNextWatches('events', 1, 429); // with Retry-After: 1
    cluster.faults.dropWatches('events');
    const { handle } = await startCreate(stack, { diskMib: 300 });
    const failure = applicationFailureOf((await settle(handle.result())).error);
    expect(failure.type).toBe('InvalidRequest');
    const eventsWatches = requestsWhere({ verb: 'watch', resource: 'events' });
    expect(eventsWatches.map((request) => request.status).slice(0, 3)).toEqual([200, 429, 200]);
    const [, refused, reopened] = eventsWatches;
    expect((reopened?.at ?? 0) - (refused?.at ?? 0)).toBeGreaterThanOrEqual(1_000);
    expect(podDeletes()).toHaveLength(1);
  });

  it('creates a running sandbox with the pod IP when the disk is large enough', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const result = await handle.result();
    expect(result.pod.ip).toMatch(/^10\./);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'running',
      pod: { name: result.pod.name, uid: result.pod.uid, ip: result.pod.ip },
      failure: null,
    });
    expect(podDeletes()).toHaveLength(0);
  });

  it('compensates and ends cancelled when cancelled while waiting, with both watches closed', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const cluster = stack.cluster;
    await waitingForIp(handle);
    await handle.cancel();
    const { error } = await settle(handle.result());
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    // The worker's informers stay; the cancelled wait held no watch of its own.
    expect(cluster.openWatches()).toBe(2);
    expect(podDeletes()).toHaveLength(1);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'cancelled' },
    });
    expect((await handle.describe()).status.name).toBe('CANCELLED');
  });

  it('leaves no pod behind when cancelled while the pod is still being created', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    const cluster = stack.cluster;
    cluster.faults.neverReady(true);
    cluster.faults.delayResponses(3_000); // the apiserver is slow: createPod is in flight
    const { handle } = await startCreate(stack, { diskMib: 2048 });
    await waitUntil(() => podCreates().length === 1);
    await handle.cancel();
    cluster.faults.delayResponses(0);
    const { error } = await settle(handle.result());
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    const pods = await stack.kubernetes.core.listNamespacedPod({ namespace: NAMESPACE });
    expect(pods.items).toHaveLength(0);
    expect(podDeletes()).toHaveLength(1);
  });

  it('succeeds when markSandboxRunning is retried after its first attempt committed', async () => {
    let calls = 0;
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      activityStore: (store) => ({
        ...store,
        async markSandboxRunning(input) {
          const result = await store.markSandboxRunning(input);
          calls += 1;
          // The write committed, but the worker never reports it: Temporal retries the step.
          if (calls === 1) throw new Error('connection lost after commit');
          return result;
        },
      }),
    });
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const result = await handle.result();
    expect(calls).toBe(2);
    expect(result.pod.ip).toMatch(/^10\./);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({ state: 'running' });
    expect(podDeletes()).toHaveLength(0);
  });

  it('fails as PodFailed within seconds when the pod is deleted while no worker watches it', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    const cluster = stack.cluster;
    cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048, deadlineMs: 120_000 });
    await waitingForIp(handle);
    const first = stack.worker as NonNullable<TestStack['worker']>;
    first.shutdown();
    await waitUntil(() => first.getState() === 'STOPPED');
    await stack.kubernetes.core.deleteNamespacedPod({
      name: (await podName(input.sandboxId)) ?? '',
      namespace: NAMESPACE,
    });
    const resumed = Date.now();
    await stack.startWorker();
    const failure = applicationFailureOf((await settle(handle.result())).error);
    expect(failure.type).toBe('PodFailed');
    expect(failure.message).toContain('deleted');
    expect(Date.now() - resumed).toBeLessThan(60_000);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'pod_failed' },
    });
  });

  it('retries a failed pod delete and ends the same way', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 } });
    stack.cluster.faults.failNextRequests('DELETE', 'pods', 1, 500);
    const { handle, input } = await startCreate(stack, { diskMib: 300 });
    const failure = applicationFailureOf((await settle(handle.result())).error);
    expect(failure.type).toBe('InvalidRequest');
    expect(podDeletes().map((request) => request.status)).toEqual([500, 200]);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'invalid_request' },
    });
  });

  /** Starts `npm run worker`'s script as a child process for this stack. */
  async function workerProcess(): Promise<{ child: ChildProcess; exited: Promise<number | null> }> {
    const kubeconfig = join((stack as TestStack).dataDir, 'kubeconfig');
    (stack as TestStack).cluster.writeKubeconfig(kubeconfig);
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker/main.ts'], {
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: (stack as TestStack).temporal.address,
        TEMPORAL_TASK_QUEUE: (stack as TestStack).taskQueue,
        KUBECONFIG: kubeconfig,
        DATA_DIR: (stack as TestStack).dataDir,
        WATCH_RETRY_DELAY_MS: '100',
        METRICS_PORT: String(await freePort()),
        LOG_FORMAT: 'json',
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    return { child, exited: new Promise((resolve) => child.on('exit', resolve)) };
  }

  it('finishes correctly after its worker is killed during the wait', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 }, worker: false });
    const cluster = stack.cluster;
    cluster.faults.neverReady(true);
    const { child, exited } = await workerProcess();
    try {
      const { handle, input } = await startCreate(stack, { diskMib: 300 });
      await waitUntil(() => cluster.openWatches('events') === 1, { timeoutMs: 90_000 });
      await waitingForIp(handle);
      child.kill('SIGKILL');
      await exited;
      const podListsBefore = podLists().length;
      await stack.startWorker();
      cluster.node.recordSandboxFailure(
        NAMESPACE,
        (await podName(input.sandboxId)) ?? '',
        INVALID_ARGUMENT_MESSAGE,
      );
      const failure = applicationFailureOf((await settle(handle.result())).error);
      expect(failure.type).toBe('InvalidRequest');
      expect(failure.message).toContain('451 MiB');
      // The new worker listed pods once (its informer) and then only watched.
      expect(podLists().length - podListsBefore).toBe(1);
      expect(podCreates()).toHaveLength(1);
      expect(podDeletes()).toHaveLength(1);
      expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
        state: 'failed',
        failure: { code: 'invalid_request' },
      });
    } finally {
      child.kill('SIGKILL');
    }
  }, 180_000);

  it('stops its watches on SIGTERM and another worker finishes the create', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 }, worker: false });
    const cluster = stack.cluster;
    cluster.faults.neverReady(true);
    const { child, exited } = await workerProcess();
    try {
      const { handle, input } = await startCreate(stack, { diskMib: 2048 });
      await waitUntil(() => cluster.openWatches() === 2, { timeoutMs: 90_000 });
      await waitingForIp(handle);
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
      expect(cluster.openWatches()).toBe(0);
      await stack.startWorker();
      await waitUntil(() => cluster.openWatches() === 2, { timeoutMs: 60_000 });
      cluster.node.makeReady(NAMESPACE, (await podName(input.sandboxId)) ?? '');
      const result = await handle.result();
      expect(result.pod.ip).toMatch(/^10\./);
      expect(podCreates()).toHaveLength(1);
      expect(podDeletes()).toHaveLength(0);
    } finally {
      child.kill('SIGKILL');
    }
  }, 180_000);

  async function podName(sandboxId: string): Promise<string | null | undefined> {
    return (await stack?.store.getSandboxById(sandboxId))?.pod.name;
  }
});
