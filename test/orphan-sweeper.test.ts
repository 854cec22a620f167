/**
 * The orphan-pod sweeper against the simulated cluster and a SQLite store: it deletes the pods
 * of failed, deleted or superseded sandboxes, and nothing else.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPod } from '../kubernetes/pods.js';
import { sweepOrphanPods } from '../worker/orphan-sweeper.js';
import { startTestStack, type TestStack } from './support/stack.js';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack({ worker: false, cluster: { startupDelayMs: 100 } });
  stack.cluster.faults.neverReady(true);
});
afterAll(async () => {
  await stack?.stop();
});

/** A sandbox in the store (unless `stored` is false) with its pod in the cluster. */
async function sandboxWithPod(stored = true) {
  const id = `sbx_${randomUUID().replace(/-/g, '').slice(0, 26)}`;
  const resources = { cpu: 1, memoryMib: 256, diskMib: 2048 };
  if (stored) {
    await stack.store.createSandbox({
      id,
      tenant: 't',
      template: 'base',
      resources,
      operationId: `op_${id.slice(4)}`,
    });
  }
  const pod = await createPod(stack.kubernetes, {
    sandboxId: id,
    generation: 1,
    template: 'base',
    image: 'example/base:1',
    resources,
  });
  const execution = { sandboxId: id, generation: 1, attempt: 1 };
  return { id, pod, execution };
}

async function podNames(): Promise<string[]> {
  const pods = await stack.kubernetes.core.listNamespacedPod({ namespace: stack.namespace });
  return pods.items.map((pod) => pod.metadata?.name ?? '');
}

describe('orphan pod sweeper', () => {
  it('deletes the pods of failed and deleted sandboxes and leaves the others alone', async () => {
    const failed = await sandboxWithPod();
    await stack.store.retireExecution({
      ...failed.execution,
      reason: 'cancelled',
      failure: { code: 'cancelled', message: 'the create was cancelled' },
    });
    const deleted = await sandboxWithPod();
    await stack.store.markSandboxDeleted({ sandboxId: deleted.id });
    const running = await sandboxWithPod();
    await stack.store.markSandboxRunning({ ...running.execution, podIp: '10.0.0.1' });
    const creating = await sandboxWithPod();
    const unknown = await sandboxWithPod(false);

    // Young pods are never swept: their create may still be recording them.
    const early = await sweepOrphanPods({ ...stack, graceMs: 60_000 });
    expect(early.deleted).toEqual([]);

    const later = Date.now() + 120_000;
    const sweep = await sweepOrphanPods({ ...stack, graceMs: 60_000, now: () => later });
    expect(sweep.deleted.sort()).toEqual([failed.pod.name, deleted.pod.name].sort());
    const left = await podNames();
    expect(left).toEqual(
      expect.arrayContaining([running.pod.name, creating.pod.name, unknown.pod.name]),
    );
    expect(left).not.toContain(failed.pod.name);
    expect(left).not.toContain(deleted.pod.name);

    // Deleted with the uid precondition, once; a second sweep finds nothing more.
    const deletes = stack.cluster.requests.filter((r) => r.method === 'DELETE');
    expect(deletes).toHaveLength(2);
    expect((await sweepOrphanPods({ ...stack, graceMs: 0 })).deleted).toEqual([]);
  });

  it('goes on with the other orphans when one delete fails', async () => {
    const orphans = [await sandboxWithPod(), await sandboxWithPod(), await sandboxWithPod()];
    for (const { execution } of orphans) {
      await stack.store.retireExecution({
        ...execution,
        reason: 'cancelled',
        failure: { code: 'cancelled', message: 'the create was cancelled' },
      });
    }
    stack.cluster.faults.failNextRequests('DELETE', 'pods', 1, 500);
    const sweep = await sweepOrphanPods({ ...stack, graceMs: 0 });
    expect(sweep.deleted).toHaveLength(2);
    // The one that failed is swept next time.
    expect((await sweepOrphanPods({ ...stack, graceMs: 0 })).deleted).toHaveLength(1);
    const left = await podNames();
    for (const { pod } of orphans) expect(left).not.toContain(pod.name);
  });
});
