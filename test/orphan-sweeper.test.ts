/**
 * The orphan-pod sweeper against the simulated cluster and a SQLite store: it deletes the pods
 * of failed, deleted or superseded sandboxes, and nothing else.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPod } from '../kubernetes/pods.js';
import { isWorkflowOpen as isWorkflowOpenIn } from '../temporal/workflow-status.js';
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

/**
 * A re-placed create's pods (docs/architecture.md, "Re-placement"): placement 1's and placement
 * `placements`'s pods of a stored sandbox, with the store recording placement `recorded`'s pod as
 * the sandbox's (createPod records each placement's pod as it makes it).
 */
async function replacedSandbox(options: { recorded: 1 | 2; running: boolean }) {
  const first = await sandboxWithPod();
  const second = await createPod(stack.kubernetes, {
    sandboxId: first.id,
    generation: 1,
    template: 'base',
    image: 'example/base:1',
    resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
    placement: 2,
    avoidNodes: ['sim-node-1'],
  });
  for (const pod of options.recorded === 2 ? [first.pod, second] : [first.pod]) {
    await stack.store.recordPod({ ...first.execution, podName: pod.name, podUid: pod.uid });
  }
  if (options.running) {
    await stack.store.markSandboxRunning({ ...first.execution, podIp: '10.0.0.9' });
  }
  return { id: first.id, placement1: first.pod, placement2: second };
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

  it('deletes the pod of a sandbox stuck creating whose create workflow is closed', async () => {
    const closed = await sandboxWithPod();
    const open = await sandboxWithPod();
    const opWithoutWorkflow = await sandboxWithPod();
    const client = stack.temporal.client;
    // No worker polls this task queue: the workflows stay open until terminated.
    const idle = `idle-${randomUUID()}`;
    for (const { id } of [closed, open]) {
      const sandbox = await stack.store.getSandboxById(id);
      await client.workflow.start('createSandbox', {
        workflowId: sandbox!.operationId,
        taskQueue: idle,
        args: [{}],
      });
    }
    const closedOp = (await stack.store.getSandboxById(closed.id))!.operationId;
    await client.workflow.getHandle(closedOp).terminate('test: the create ended without its pod');
    const isWorkflowOpen = (workflowId: string) =>
      isWorkflowOpenIn(client.connection, 'default', workflowId);
    const sweep = await sweepOrphanPods({ ...stack, graceMs: 0, isWorkflowOpen });
    expect(sweep.deleted).toContain(closed.pod.name);
    // Temporal does not know this operation at all: closed long ago, or never started.
    expect(sweep.deleted).toContain(opWithoutWorkflow.pod.name);
    expect(sweep.deleted).not.toContain(open.pod.name);
    await client.workflow
      .getHandle((await stack.store.getSandboxById(open.id))!.operationId)
      .terminate();
  });

  it('deletes, by uid, the pod of an earlier placement that a re-placed create left behind', async () => {
    // Placement 1's delete was missed (say the worker died around it); placement 2 runs.
    const running = await replacedSandbox({ recorded: 2, running: true });
    // Placement 2 is waiting for its IP, placement 1's pod still there.
    const waiting = await replacedSandbox({ recorded: 2, running: false });
    // Placement 2's pod made but not recorded yet: its create may be about to record it.
    const recording = await replacedSandbox({ recorded: 1, running: false });
    const deletesBefore = stack.cluster.requests.filter((r) => r.method === 'DELETE').length;

    const sweep = await sweepOrphanPods({ ...stack, graceMs: 0 });
    expect(sweep.deleted.sort()).toEqual([running.placement1.name, waiting.placement1.name].sort());
    expect(sweep.lost).not.toContain(running.id);
    const deletes = stack.cluster.requests
      .filter((r) => r.method === 'DELETE')
      .slice(deletesBefore);
    expect(deletes.map((r) => [r.path.split('/').pop(), r.deleteOptions])).toEqual(
      expect.arrayContaining(
        [running.placement1, waiting.placement1].map((pod) => [
          pod.name,
          expect.objectContaining({ preconditions: { uid: pod.uid } }),
        ]),
      ),
    );
    expect(deletes).toHaveLength(2);
    const left = await podNames();
    expect(left).toEqual(
      expect.arrayContaining([
        running.placement2.name,
        waiting.placement2.name,
        recording.placement1.name,
        recording.placement2.name,
      ]),
    );
    expect((await stack.store.getSandboxById(running.id))?.state).toBe('running');
  });

  it('marks a running sandbox whose pod is gone lost, with when and why', async () => {
    const gone = await sandboxWithPod();
    const alive = await sandboxWithPod();
    for (const { id, pod, execution } of [gone, alive]) {
      await stack.store.recordPod({ ...execution, podName: pod.name, podUid: pod.uid });
      await stack.store.markSandboxRunning({ ...execution, podIp: '10.0.0.7' });
      expect((await stack.store.getSandboxById(id))?.state).toBe('running');
    }
    await stack.kubernetes.core.deleteNamespacedPod({
      name: gone.pod.name,
      namespace: stack.namespace,
    });
    const before = Date.now();
    const sweep = await sweepOrphanPods({ ...stack, graceMs: 0 });
    expect(sweep.lost).toEqual([gone.id]);
    const lost = await stack.store.getSandboxById(gone.id);
    expect(lost).toMatchObject({
      state: 'lost',
      pod: { name: gone.pod.name, uid: gone.pod.uid, ip: null },
      failure: {
        code: 'pod_lost',
        message: `its pod ${gone.pod.name} (uid ${gone.pod.uid}) is gone`,
      },
    });
    expect(Date.parse(lost!.updatedAt)).toBeGreaterThanOrEqual(before - 1_000);
    expect((await stack.store.getSandboxById(alive.id))?.state).toBe('running');
    // Once lost, a second sweep leaves it alone.
    expect((await sweepOrphanPods({ ...stack, graceMs: 0 })).lost).toEqual([]);
  });

  it('marks lost every running sandbox whose pod is gone, however many pages they fill', async () => {
    const gone = [await sandboxWithPod(), await sandboxWithPod(), await sandboxWithPod()];
    const alive = await sandboxWithPod();
    for (const { pod, execution } of [...gone, alive]) {
      await stack.store.recordPod({ ...execution, podName: pod.name, podUid: pod.uid });
      await stack.store.markSandboxRunning({ ...execution, podIp: '10.0.0.8' });
    }
    for (const { pod } of gone) {
      await stack.kubernetes.core.deleteNamespacedPod({
        name: pod.name,
        namespace: stack.namespace,
      });
    }
    // One running sandbox a page: the sweep must read past the first.
    const sweep = await sweepOrphanPods({ ...stack, graceMs: 0, lostCheckPageSize: 1 });
    expect([...sweep.lost].sort()).toEqual(gone.map(({ id }) => id).sort());
    for (const { id } of gone) {
      expect((await stack.store.getSandboxById(id))?.state).toBe('lost');
    }
    expect((await stack.store.getSandboxById(alive.id))?.state).toBe('running');
  });
});
