/**
 * The retention Schedule (src/temporal/retention-schedule.ts) on the dev server: two workers
 * starting at once both succeed, one creating the Schedule and one updating it; described, it
 * starts `purgeAgedRows` on the workers' task queue with the settings, overlap SKIP, a memo and
 * a summary; a triggered run purges what aged out (a failed sandbox, its operation) and keeps a
 * running create.
 */
import { NativeConnection } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RetentionConfig } from '../src/config/retention.js';
import type { RetentionRunResult } from '../contract/index.js';
import { waitUntil } from '../tools/wait-until.js';
import { retentionScheduleId } from '../src/temporal/retention-schedule.js';
import { runSandboxWorker } from '../src/worker/sandbox-worker.js';
import { startTestStack, type TestStack } from './support/stack.js';

/** Everything ages out after 1 ms; batches of 2 prove the run goes batch after batch. */
const RETENTION: RetentionConfig = {
  retentionMs: {
    sandboxes: 1,
    operations: 1,
    events: 1,
    idempotency_keys: 1,
    webhook_deliveries: 1,
  },
  batchSize: 2,
  maxBatchesPerRun: 100,
  intervalMs: 3_600_000,
};

describe('the retention Schedule', () => {
  let stack: TestStack;
  let second: NativeConnection | undefined;
  let stopSecond: () => Promise<void> = async () => undefined;
  beforeAll(async () => {
    stack = await startTestStack({ worker: false, retention: RETENTION });
  });
  afterAll(async () => {
    await stack?.temporal.client.schedule
      .getHandle(retentionScheduleId(stack.taskQueue))
      .delete()
      .catch(() => undefined);
    await stopSecond();
    await second?.close();
    await stack?.stop();
  });

  const handle = () =>
    stack.temporal.client.schedule.getHandle(retentionScheduleId(stack.taskQueue));

  it('is created by one of two workers starting at once and updated by the other; both start', async () => {
    // Two processes' workers: one connection each (one connection serves a task queue once).
    second = await NativeConnection.connect({ address: stack.temporal.address });
    const [first, other] = await Promise.all([
      stack.startWorker(),
      runSandboxWorker({
        connection: second,
        namespace: 'default',
        taskQueue: stack.taskQueue,
        kubernetes: stack.kubernetes,
        store: stack.store,
        logger: stack.logger,
        watchRetryDelayMs: 100,
        watchTimeoutSeconds: 25,
        templates: stack.templates,
        retention: RETENTION,
        worker: { workflowBundle: stack.temporal.workflowBundle, shutdownGraceTimeMs: 2_000 },
      }),
    ]);
    stopSecond = () => other.stop();
    expect([first.getState(), other.worker.getState()]).toEqual(['RUNNING', 'RUNNING']);
    const outcomes = stack.logs
      .filter((line) => line.msg === 'retention schedule ensured')
      .map((line) => line.outcome)
      .sort();
    expect(outcomes).toEqual(['created', 'updated']);
  });

  it('starts purgeAgedRows on the task queue with the settings, overlap SKIP, a memo and a summary', async () => {
    const described = await handle().describe();
    expect(described.action).toMatchObject({
      type: 'startWorkflow',
      workflowType: 'purgeAgedRows',
      taskQueue: stack.taskQueue,
      args: [{ retentionMs: RETENTION.retentionMs, batchSize: 2, maxBatches: 100 }],
    });
    expect(described.action.staticSummary).toMatch(/^purge rows past their retention/);
    expect(described.policies.overlap).toBe('SKIP');
    expect(described.spec.intervals).toMatchObject([{ every: 3_600_000 }]);
    expect(described.memo).toMatchObject({ docs: 'docs/configuration.md#retention' });
  });

  it('a triggered run purges what aged out, batch after batch, and keeps a running create', async () => {
    const { store } = stack;
    const resources = { cpu: 1, memoryMib: 1024, diskMib: 2048 };
    for (const n of [1, 2, 3]) {
      const id = `sbx_ret_${n}`;
      await store.createSandbox({
        id,
        tenant: 'acme',
        template: 'base',
        resources,
        operationId: `op_ret_${n}`,
      });
      expect(
        await store.markSandboxFailed({ sandboxId: id, code: 'pod_failed', message: 'test' }),
      ).toBe(true);
    }
    await store.createSandbox({
      id: 'sbx_ret_running',
      tenant: 'acme',
      template: 'base',
      resources,
      operationId: 'op_ret_running',
    });
    await handle().trigger();
    const workflowId = await waitUntil(
      async () => (await handle().describe()).info.recentActions[0]?.action.workflow.workflowId,
      { what: 'the triggered run to start' },
    );
    const result = (await stack.temporal.client.workflow
      .getHandle(workflowId)
      .result()) as RetentionRunResult;
    expect(result.complete).toBe(true);
    expect(result.purged).toMatchObject({ sandboxes: 3, operations: 3 });
    // Batches of 2: 3 rows of a kind take two batches (2, then 1).
    expect(result.batches).toBeGreaterThanOrEqual(2 + 2);
    for (const n of [1, 2, 3]) {
      expect(await store.getSandboxById(`sbx_ret_${n}`)).toBeUndefined();
      expect(await store.getOperation('acme', `op_ret_${n}`)).toBeUndefined();
    }
    expect(await store.getSandboxById('sbx_ret_running')).toBeDefined();
    expect(await store.getOperation('acme', 'op_ret_running')).toBeDefined();
  });
});
