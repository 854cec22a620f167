/**
 * The orphan-pod sweeper against the simulated cluster and a SQLite store: it deletes the pods
 * of failed, deleted or superseded sandboxes, and nothing else.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPod } from '../src/kubernetes/pods.js';
import { createWarmPod } from '../src/kubernetes/warm-pods.js';
import {
  isWorkflowOpen as isWorkflowOpenIn,
  listRunningWorkflowIds,
} from '../src/temporal/workflow-status.js';
import { sweepOrphanPods } from '../src/worker/orphan-sweeper.js';
import { startGrpcCounter, type GrpcCounter } from './support/grpc-counter.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

let stack: TestStack;
let counter: GrpcCounter;
let countedConnection: Connection;
let countedClient: Client;
beforeAll(async () => {
  stack = await startTestStack({ worker: false, cluster: { startupDelayMs: 100 } });
  stack.cluster.faults.neverReady(true);
  // The sweep's Temporal requests, counted by what reached the server.
  counter = await startGrpcCounter(stack.temporal.address);
  countedConnection = await Connection.connect({ address: counter.address });
  countedClient = new Client({ connection: countedConnection, namespace: 'default' });
});
afterAll(async () => {
  await countedConnection?.close();
  await counter?.close();
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
    const deletes = stack.cluster.requestsWhere({ verb: ['delete', 'deletecollection'] });
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
    const beforeSweep = stack.cluster.requestMark();

    const sweep = await sweepOrphanPods({ ...stack, graceMs: 0 });
    expect(sweep.deleted.sort()).toEqual([running.placement1.name, waiting.placement1.name].sort());
    expect(sweep.lost).not.toContain(running.id);
    const deletes = stack.cluster.requestsWhere({
      verb: ['delete', 'deletecollection'],
      after: beforeSweep,
    });
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

  describe('the Temporal cost of the creates stuck creating', () => {
    /** The sweep as the worker wires it (src/worker/serve.ts), through the counting proxy. */
    const counted = {
      isWorkflowOpen: (workflowId: string) =>
        isWorkflowOpenIn(countedConnection, 'default', workflowId),
      listRunningCreates: () => listRunningWorkflowIds(countedClient, 'createSandbox'),
    };
    const idle = `idle-${randomUUID()}`;
    const waiting: Awaited<ReturnType<typeof sandboxWithPod>>[] = [];
    const operationOf = async (id: string) => (await stack.store.getSandboxById(id))!.operationId;

    /** `n` more creates waiting: pod made, sandbox creating, workflow open (nobody polls). */
    async function addWaits(n: number) {
      for (let i = 0; i < n; i++) {
        const wait = await sandboxWithPod();
        await stack.temporal.client.workflow.start('createSandbox', {
          workflowId: await operationOf(wait.id),
          taskQueue: idle,
          args: [{}],
        });
        waiting.push(wait);
      }
    }

    /** Until visibility (eventually consistent) agrees that exactly `open` are running. */
    async function visibilitySettled(open: string[], closed: string[] = []) {
      await waitUntil(
        async () => {
          const running = await listRunningWorkflowIds(stack.temporal.client, 'createSandbox');
          return open.every((id) => running.has(id)) && !closed.some((id) => running.has(id));
        },
        { what: `visibility listing ${open.length} creates running, ${closed.length} closed` },
      );
    }

    /** One sweep; the requests it sent, by method. */
    async function countedSweep(deps: Partial<typeof counted> = counted) {
      const before = {
        describe: counter.count('DescribeWorkflowExecution'),
        list: counter.count('ListWorkflowExecutions'),
      };
      const sweep = await sweepOrphanPods({ ...stack, graceMs: 0, ...deps });
      return {
        sweep,
        describes: counter.count('DescribeWorkflowExecution') - before.describe,
        lists: counter.count('ListWorkflowExecutions') - before.list,
      };
    }

    afterAll(async () => {
      for (const { id } of waiting) {
        await stack.temporal.client.workflow
          .getHandle(await operationOf(id))
          .terminate()
          .catch(() => undefined);
      }
    });

    it('costs the same few requests with 2 or 8 creates waiting, and no describe', async () => {
      // Earlier tests' pods stuck creating without an open workflow: deleted by a sweep that
      // describes each (no list, so visibility's lag cannot keep one for a later sweep).
      await sweepOrphanPods({ ...stack, graceMs: 0, isWorkflowOpen: counted.isWorkflowOpen });
      await addWaits(2);
      await visibilitySettled(await Promise.all(waiting.map(({ id }) => operationOf(id))));
      const two = await countedSweep();
      await addWaits(6);
      await visibilitySettled(await Promise.all(waiting.map(({ id }) => operationOf(id))));
      const eight = await countedSweep();

      expect(two.sweep.deleted).toEqual([]);
      expect(eight.sweep.deleted).toEqual([]);
      expect(two.describes).toBe(0);
      expect(eight.describes).toBe(0);
      // One page of running creates (others' tests' too: far fewer than 1,000).
      expect(two.lists).toBe(1);
      expect(eight.lists).toBe(1);
      const left = await podNames();
      for (const { pod } of waiting) expect(left).toContain(pod.name);
    });

    it('still deletes the pod of a create whose workflow was terminated, confirming with one describe', async () => {
      expect(waiting.length).toBeGreaterThanOrEqual(8);
      const [ended, ...open] = waiting;
      const endedOp = await operationOf(ended!.id);
      await stack.temporal.client.workflow.getHandle(endedOp).terminate('test: the create ended');
      const openOps = await Promise.all(open.map(({ id }) => operationOf(id)));
      await visibilitySettled(openOps, [endedOp]);

      const { sweep, describes, lists } = await countedSweep();
      expect(sweep.deleted).toEqual([ended!.pod.name]);
      expect(describes).toBe(1);
      expect(lists).toBe(1);
      const left = await podNames();
      expect(left).not.toContain(ended!.pod.name);
      for (const { pod } of open) expect(left).toContain(pod.name);
      waiting.splice(0, 1);
    });

    it('confirms an absence from the list before deleting: a lagging list deletes nothing', async () => {
      // Visibility that has not seen the creates yet: each absent one is described, found open.
      const { sweep, describes } = await countedSweep({
        ...counted,
        listRunningCreates: () => Promise.resolve(new Set<string>()),
      });
      expect(sweep.deleted).toEqual([]);
      expect(describes).toBe(waiting.length);
    });

    it('leaves every creating sandbox alone when the list fails, describing none', async () => {
      const { sweep, describes } = await countedSweep({
        ...counted,
        listRunningCreates: () => Promise.reject(new Error('test: visibility unavailable')),
      });
      expect(sweep.deleted).toEqual([]);
      expect(describes).toBe(0);
      const left = await podNames();
      for (const { pod } of waiting) expect(left).toContain(pod.name);
    });
  });
});

describe('the orphan sweeper and warm pool pods', () => {
  it('deletes the unclaimed pods it made of a pool the catalog dropped; leaves a pooled template’s and pods it did not make', async () => {
    const resources = { cpu: 1, memoryMib: 256, diskMib: 2048 };
    const dropped = await createWarmPod(stack.kubernetes, {
      template: 'dropped',
      image: 'example/base:1',
      resources,
    });
    const kept = await createWarmPod(stack.kubernetes, {
      template: 'kept',
      image: 'example/base:1',
      resources,
    });
    const planted = await createWarmPod(stack.kubernetes, {
      template: 'dropped',
      image: 'example/base:1',
      resources,
    });
    // The first two are this installation's; the third someone else's (not recorded).
    for (const [pod, template] of [
      [dropped, 'dropped'],
      [kept, 'kept'],
    ] as const) {
      await stack.store.warmPools.recordMadePod({
        uid: pod.uid,
        name: pod.name,
        template,
        fingerprint: 'f',
      });
    }
    const templates = {
      ...stack.templates,
      kept: {
        image: 'example/base:1',
        warm_pool: { size: 1, resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 } },
      },
    };
    const sweep = await sweepOrphanPods({ ...stack, templates, graceMs: 0 });
    expect(sweep.deleted).toContain(dropped.name);
    expect(sweep.deleted).not.toContain(kept.name);
    expect(sweep.deleted).not.toContain(planted.name);
    const deletes = stack.cluster.requestsWhere({
      verb: 'delete',
      resource: 'pods',
      name: dropped.name,
    });
    expect(deletes).toHaveLength(1);
    expect(deletes[0]?.deleteOptions).toMatchObject({
      preconditions: { uid: dropped.uid, resourceVersion: expect.any(String) },
    });
  });
});
