/**
 * Many waits, small pages (docs/architecture.md, "Waiting costs nothing", "Every wait, however
 * many"): the decider reads the recorded waits and the creates waiting without a record page by
 * page, so no wait beyond a page is left undecided. The pages are set small here (2) so a handful
 * of real creates stand for 10,000. Real dev server, worker, store and simulated cluster over
 * HTTP; the store is wrapped only to blind the worker's own decider where a test needs that.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadinessDecider } from '../activities/readiness-decider.js';
import { SandboxInformers } from '../kubernetes/sandbox-informers.js';
import { settle, startCreate, storeGoneCreate, waitingAsync } from './support/creates.js';
import { failingStore } from './support/failing-store.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { until } from './support/until.js';

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

describe('every wait is covered, however many pages they fill', () => {
  it('one reconcile decides every recorded wait when they fill more than a page', async () => {
    // The worker's own decider cannot read the waits: only the reconcile below decides them.
    const down = { on: false };
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      activityStore: failingStore(['findReadinessWait', 'listReadinessWaits'], down),
      reconcileIntervalMs: NEVER,
    });
    stack.cluster.faults.neverReady(true);
    const creates = [];
    for (let i = 0; i < 7; i += 1) {
      creates.push(await startCreate(stack, { diskMib: 2048, deadlineMs: 600_000 }));
    }
    const pods = [];
    for (const { handle, input } of creates) {
      pods.push(await waitingAsync(stack as TestStack, handle, input.sandboxId));
    }
    down.on = true;
    for (const podName of pods) {
      stack.cluster.node.recordSandboxFailure(NAMESPACE, podName, INVALID_ARGUMENT_MESSAGE);
    }

    // A worker starting now (its informers list the refusals), reading the waits 2 at a time.
    const informers = new SandboxInformers({
      client: stack.kubernetes,
      retryDelayMs: 100,
      watchTimeoutSeconds: 25,
    });
    const decider = new ReadinessDecider({
      informers,
      store: stack.store,
      client: stack.temporal.client,
      reconcilePageSize: 2,
      reconcileIntervalMs: NEVER,
      unrecordedCheckIntervalMs: NEVER,
    });
    try {
      informers.start();
      await until(() => informers.synced, 60_000);
      decider.start(); // reconciles at once, its informers having listed
      await decider.reconcile(); // that same reconcile
      // Every completion clears its row once Temporal accepted it: 7 waits, 4 pages, none left.
      expect((await stack.store.listReadinessWaits()).map((wait) => wait.podName)).toEqual([]);
      for (const { handle } of creates) {
        const { error } = await settle(handle.result());
        expect(error).toBeInstanceOf(WorkflowFailedError);
        const cause = (error as WorkflowFailedError).cause;
        expect(cause).toBeInstanceOf(ApplicationFailure);
        expect((cause as ApplicationFailure).type).toBe('InvalidRequest');
      }
    } finally {
      await decider.stop();
      await informers.stop();
      down.on = false;
    }
  }, 300_000);

  it('the lost-wait check reaches a lost wait behind more than a page of creates it cannot retry', async () => {
    stack = await startTestStack({
      cluster: { startupDelayMs: 100 },
      decider: { unrecordedCheckIntervalMs: NEVER },
    });
    stack.cluster.faults.neverReady(true);
    const { handle, input } = await startCreate(stack, { diskMib: 2048, deadlineMs: 600_000 });
    const podName = await waitingAsync(stack as TestStack, handle, input.sandboxId);
    // As if its worker had died between taking the task and recording the wait: no row.
    const [lost] = await stack.store.listReadinessWaits();
    expect(await stack.store.clearReadinessWait(lost?.podUid ?? '', lost?.taskToken ?? '')).toBe(
      true,
    );
    // Two pages of creates waiting since later, whose workflows Temporal does not know.
    for (let i = 0; i < 4; i += 1) await storeGoneCreate(stack.store, i);
    await new Promise((resolve) => setTimeout(resolve, 1_500));

    const informers = new SandboxInformers({
      client: stack.kubernetes,
      retryDelayMs: 100,
      watchTimeoutSeconds: 25,
    });
    const decider = new ReadinessDecider({
      informers,
      store: stack.store,
      client: stack.temporal.client,
      unrecordedPageSize: 2,
      unrecordedAfterMs: 1_000,
      unrecordedCheckIntervalMs: NEVER,
      reconcileIntervalMs: NEVER,
    });
    try {
      decider.start();
      // Check 1: the newest page and the next; check 2: the newest again and the lost one's.
      for (let check = 0; check < 3; check += 1) await decider.retryUnrecorded();
      await until(async () => {
        const [again] = await stack!.store.listReadinessWaits();
        return again !== undefined && again.taskToken !== lost?.taskToken;
      }, 60_000).catch(() => {
        throw new Error('the lost wait behind two full pages was never retried (WaitNotRecorded)');
      });
      const [pending] = (await handle.describe()).raw.pendingActivities ?? [];
      expect(pending?.lastFailure?.applicationFailureInfo?.type).toBe('WaitNotRecorded');
      stack.cluster.node.makeReady(NAMESPACE, podName);
      expect((await handle.result()).pod.ip).toMatch(/^10\./);
    } finally {
      await decider.stop();
    }
  }, 240_000);
});
