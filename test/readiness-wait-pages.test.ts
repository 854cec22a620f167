/**
 * Many waits, small pages (docs/architecture.md, "Waiting costs nothing", "Every wait, however
 * many"): a decider's reconcile reads the creates waiting for an IP page by page and completes
 * each decided wait by id, so no wait beyond a page is left undecided. The pages are set small
 * here (2) so a handful of real creates stand for 10,000. Real dev server, worker, store and
 * simulated cluster over HTTP; the worker is stopped where only the reconcile may decide.
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadinessDecider } from '../src/verdict/readiness-decider.js';
import { SandboxInformers } from '../src/kubernetes/sandbox-informers.js';
import { settle, startCreate, storeGoneCreate, waitingAsync } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

const NAMESPACE = 'sandboxes';
const INVALID_ARGUMENT_MESSAGE =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
  'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';
const NEVER = 3_600_000;

let stack: TestStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** Stops the stack's worker and its informers: nothing but the test's decider decides. */
async function stopWorker(stack: TestStack): Promise<void> {
  const worker = stack.worker as NonNullable<TestStack['worker']>;
  worker.shutdown();
  await waitUntil(() => worker.getState() === 'STOPPED' && stack.cluster.openWatches() === 0, {
    timeoutMs: 60_000,
  });
}

/** A decider over informers of its own, as a worker starting now has, reading `pageSize` a page. */
async function startDecider(stack: TestStack, pageSize: number) {
  const informers = new SandboxInformers({
    client: stack.kubernetes,
    retryDelayMs: 100,
    watchTimeoutSeconds: 25,
  });
  const decider = new ReadinessDecider({
    informers,
    store: stack.store,
    client: stack.temporal.client,
    reconcilePageSize: pageSize,
    reconcileIntervalMs: NEVER,
  });
  informers.start();
  await waitUntil(() => informers.synced, { timeoutMs: 60_000 });
  return {
    decider,
    async stop() {
      await decider.stop();
      await informers.stop();
    },
  };
}

/** Whether the create's readiness wait is still open in Temporal. */
async function stillWaiting(handle: WorkflowHandle): Promise<boolean> {
  const pending = (await handle.describe()).raw.pendingActivities ?? [];
  return pending.some((activity) => activity.activityType?.name === 'awaitPodReady');
}

async function expectInvalidRequest(handle: WorkflowHandle): Promise<void> {
  const { error } = await settle(handle.result());
  expect(error).toBeInstanceOf(WorkflowFailedError);
  const cause = (error as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  expect((cause as ApplicationFailure).type).toBe('InvalidRequest');
}

describe('every wait is covered, however many pages they fill', () => {
  it('one reconcile decides every waiting create when they fill more than a page', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 }, reconcileIntervalMs: NEVER });
    stack.cluster.faults.neverReady(true);
    const creates = [];
    for (let i = 0; i < 7; i += 1) {
      creates.push(await startCreate(stack, { diskMib: 2048, deadlineMs: 600_000 }));
    }
    const pods = [];
    for (const { handle, input } of creates) {
      pods.push(await waitingAsync(stack as TestStack, handle, input.sandboxId));
    }
    await stopWorker(stack);
    for (const podName of pods) {
      stack.cluster.node.recordSandboxFailure(NAMESPACE, podName, INVALID_ARGUMENT_MESSAGE);
    }

    // A worker starting now (its informers list the refusals), reading the creates 2 at a time.
    const started = await startDecider(stack, 2);
    try {
      started.decider.start(); // reconciles at once, its informers having listed
      await started.decider.reconcile(); // that same reconcile
      // 7 waiting creates, 4 pages: every wait was failed by id, none is open.
      const open = [];
      for (const { handle } of creates)
        if (await stillWaiting(handle)) open.push(handle.workflowId);
      expect(open).toEqual([]);
    } finally {
      await started.stop();
    }
    await stack.startWorker();
    for (const { handle } of creates) await expectInvalidRequest(handle);
  }, 300_000);

  it('creates whose workflows Temporal no longer knows, a page and more of them, do not stop the reconcile', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 }, reconcileIntervalMs: NEVER });
    stack.cluster.faults.neverReady(true);
    // Two pages of creates waiting since earlier, whose workflows and pods are gone.
    for (let i = 0; i < 4; i += 1) await storeGoneCreate(stack.store, i);
    const { handle, input } = await startCreate(stack, { diskMib: 2048, deadlineMs: 600_000 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    await stopWorker(stack);
    stack.cluster.node.recordSandboxFailure(NAMESPACE, podName, INVALID_ARGUMENT_MESSAGE);

    const started = await startDecider(stack, 2);
    try {
      started.decider.start();
      await started.decider.reconcile();
      expect(await stillWaiting(handle)).toBe(false);
    } finally {
      await started.stop();
    }
    await stack.startWorker();
    await expectInvalidRequest(handle);
  }, 240_000);

  it('an outcome recorded at the decision whose failure never reached Temporal is decided by the next reconcile', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 }, reconcileIntervalMs: NEVER });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048, deadlineMs: 600_000 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    const podUid = (await stack.store.getSandboxById(input.sandboxId))?.pod?.uid ?? '';
    await stopWorker(stack);
    // The node refuses the pod, and the worker that held the wait recorded the outcome at the
    // decision, then died before failing the wait (src/verdict/outcome-at-decision.ts's write).
    stack.cluster.node.recordSandboxFailure(NAMESPACE, podName, INVALID_ARGUMENT_MESSAGE);
    const recorded = {
      code: 'invalid_request',
      message: `the node refused the sandbox: ${INVALID_ARGUMENT_MESSAGE}`,
      details: { podName, podUid },
    };
    expect(
      await stack.store.recordOperationOutcome({
        operationId: input.operationId,
        status: 'failed',
        error: recorded,
        podUid,
      }),
    ).toBe(true);
    expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);

    const started = await startDecider(stack, 2);
    try {
      started.decider.start();
      await started.decider.reconcile();
      expect(await stillWaiting(handle), 'the wait, decided from the caches').toBe(false);
    } finally {
      await started.stop();
    }
    // The workflow ends with the outcome recorded first, as the row says.
    await stack.startWorker();
    await expectInvalidRequest(handle);
    const operation = await stack.store.getOperation(input.tenantId, input.operationId);
    expect(operation).toMatchObject({ status: 'failed', done: true, error: recorded });
  }, 240_000);
});
