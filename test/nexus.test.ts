/**
 * The `sandbox` Nexus service (docs/nexus.md): a caller's workflow in a second namespace creates
 * a sandbox through a Nexus endpoint and gets it running, gets `invalid_request` with the node's
 * reason for a refused one, and cancels the create by being cancelled (compensation deletes the
 * pod). A real dev server (the second namespace and the endpoint registered through its gRPC
 * API), the create worker serving the service, the simulated cluster over HTTP, SQLite.
 */
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { Client, WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure, NexusOperationFailure } from '@temporalio/common';
import { msToTs } from '@temporalio/common/lib/time.js';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import type {
  createSandboxThroughNexus,
  deleteSandboxThroughNexus,
} from '../clients/examples/nexus-caller/workflows.js';
import type { NexusCreateInput } from '../src/nexus/service.js';
import { runSandboxWorker, type RunningSandboxWorker } from '../src/worker/sandbox-worker.js';
import type { Store } from '../src/store/index.js';
import { bundleSandboxWorkflows } from '../src/worker/workflow-bundle.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

const suffix = randomUUID().replace(/-/g, '').slice(0, 12);
const callerNamespace = `nexus-caller-${suffix}`;
/** A namespace NEXUS_TENANTS does not map. */
const strangerNamespace = `nexus-stranger-${suffix}`;
const endpoint = `sandbox-${suffix}`;
const tenant = `nexus-tenant-${suffix}`;
const callerQueue = `nexus-caller-${suffix}`;

let stack: TestStack;
/**
 * When set, the handler's next create waits this long (ms) between storing its rows and starting
 * its workflow: the start outlives the caller server's request.
 */
let slowNextStartMs: number | undefined;

/** The stack's store as the Nexus handler sees it: {@link slowNextStartMs} applies. */
function handlerStore(store: Store): Store {
  return {
    ...store,
    async createSandbox(input) {
      const outcome = await store.createSandbox(input);
      const delayMs = slowNextStartMs;
      slowNextStartMs = undefined;
      if (delayMs) await new Promise((resolve) => setTimeout(resolve, delayMs));
      return outcome;
    },
  };
}
let handlerWorker: RunningSandboxWorker;
const callerWorkers: Array<{ worker: Worker; run: Promise<void> }> = [];

/** A worker of the caller's workflows in `namespace`, once the new namespace is usable. */
async function startCallerWorker(
  namespace: string,
  workflowBundle: { codePath: string } | { code: string } = stack.temporal.workflowBundle,
): Promise<void> {
  let worker: Worker | undefined;
  // A new namespace reaches every service of the dev server within a few seconds.
  await waitUntil(
    async () => {
      try {
        worker = await Worker.create({
          connection: stack.temporal.nativeConnection,
          namespace,
          taskQueue: callerQueue,
          workflowBundle,
        });
        return true;
      } catch {
        return false;
      }
    },
    { timeoutMs: 60_000 },
  );
  callerWorkers.push({ worker: worker!, run: worker!.run() });
}

beforeAll(async () => {
  stack = await startTestStack({ worker: false });
  const { connection } = stack.temporal.client;
  for (const namespace of [callerNamespace, strangerNamespace]) {
    await connection.workflowService.registerNamespace({
      namespace,
      workflowExecutionRetentionPeriod: msToTs('1 day'),
    });
  }
  await connection.operatorService.createNexusEndpoint({
    spec: {
      name: endpoint,
      target: { worker: { namespace: 'default', taskQueue: stack.taskQueue } },
    },
  });
  const config = loadConfig({
    API_TOKENS: `unused:${randomUUID()}`,
    TEMPORAL_TASK_QUEUE: stack.taskQueue,
    CREATE_DEADLINE_MS: '60000',
    NEXUS_TENANTS: `${callerNamespace}:${tenant}`,
  });
  handlerWorker = await runSandboxWorker({
    connection: stack.temporal.nativeConnection,
    namespace: 'default',
    taskQueue: stack.taskQueue,
    kubernetes: stack.kubernetes,
    store: stack.store,
    client: stack.temporal.client,
    logger: stack.logger,
    watchRetryDelayMs: 100,
    watchTimeoutSeconds: 25,
    templates: stack.templates,
    worker: {
      workflowBundle: stack.temporal.workflowBundle,
      shutdownGraceTimeMs: 2_000,
      nexus: {
        store: handlerStore(stack.store),
        config,
        logger: stack.logger,
        tenants: config.nexusTenants,
      },
    },
  });
  await startCallerWorker(callerNamespace);
  // The stranger's workflows may forge a `nexus-link` header (test/support/nexus-forged-link.ts).
  await startCallerWorker(
    strangerNamespace,
    await bundleSandboxWorkflows(
      fileURLToPath(new URL('../clients/examples/nexus-caller/workflows.ts', import.meta.url)),
      [fileURLToPath(new URL('./support/nexus-forged-link.ts', import.meta.url))],
    ),
  );
});

afterAll(async () => {
  for (const { worker, run } of callerWorkers) {
    if (worker.getState() === 'RUNNING') worker.shutdown();
    await run.catch(() => undefined);
  }
  await handlerWorker?.stop();
  await stack?.stop();
});

function callerClient(namespace = callerNamespace) {
  return new Client({ connection: stack.temporal.client.connection, namespace });
}

async function startCaller(
  diskMib: number,
  namespace = callerNamespace,
  memo?: Record<string, unknown>,
  fields: Pick<NexusCreateInput, 'ttl' | 'labels'> = {},
) {
  return callerClient(namespace).workflow.start<typeof createSandboxThroughNexus>(
    'createSandboxThroughNexus',
    {
      workflowId: `caller-${randomUUID()}`,
      memo,
      taskQueue: callerQueue,
      args: [
        endpoint,
        { template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: diskMib }, ...fields },
      ],
    },
  );
}

describe('the sandbox Nexus service', () => {
  it("a caller's workflow in another namespace creates a sandbox of its mapped tenant and gets it running", async () => {
    const outcome = await (await startCaller(2048)).result();
    expect(outcome.status, JSON.stringify(outcome)).toBe('running');
    if (outcome.status !== 'running') return;
    const sandbox = await stack.store.getSandbox(tenant, outcome.sandbox.sandboxId);
    expect(sandbox?.state).toBe('running');
    expect(outcome.sandbox.pod.ip).toBe(sandbox?.pod.ip);
    // A caller of the first contract gets its shape: no labels, no lifetime (`base` has none).
    expect(Object.keys(outcome.sandbox).sort()).toEqual(['pod', 'sandboxId']);
  });

  it('a create with a ttl and labels makes a sandbox that has them, and its result carries them', async () => {
    const labels = { team: 'payments', 'app.example.com/run': 'r-1' };
    const outcome = await (
      await startCaller(2048, callerNamespace, undefined, { ttl: '3600s', labels })
    ).result();
    expect(outcome.status, JSON.stringify(outcome)).toBe('running');
    if (outcome.status !== 'running') return;
    expect(outcome.sandbox).toMatchObject({ ttl: '3600s', labels });
    const sandbox = await stack.store.getSandbox(tenant, outcome.sandbox.sandboxId);
    expect(sandbox?.ttlMs).toBe(3_600_000);
    expect(sandbox?.labels).toEqual(labels);
    expect(sandbox?.expireTime).not.toBeNull();
  });

  it.each([
    ['a ttl of 0s', { ttl: '0s' }, /^ttl must be a duration/],
    ['a ttl that is no duration', { ttl: 'an hour' }, /^ttl must be a duration/],
    ['a label key with a space', { labels: { 'bad key': 'x' } }, /labels/],
  ] as const)(
    'refuses %s as the REST create does: invalid_request, no sandbox',
    async (_what, fields, message) => {
      const before = (await stack.store.listSandboxes(tenant, { limit: 100 })).sandboxes.length;
      const outcome = await (
        await startCaller(2048, callerNamespace, undefined, fields as NexusCreateInput)
      ).result();
      expect(outcome).toMatchObject({ status: 'failed', code: 'invalid_request' });
      if (outcome.status !== 'failed') return;
      expect(outcome.message).toMatch(message);
      expect((await stack.store.listSandboxes(tenant, { limit: 100 })).sandboxes).toHaveLength(
        before,
      );
    },
  );

  it('a start the caller retries after its request timed out is the same create: one sandbox', async () => {
    const before = (await stack.store.listSandboxes(tenant, { limit: 100 })).sandboxes.length;
    // The first start stores the create, then outlives the caller server's 10 s request timeout
    // before it starts the workflow; the server retries it with the same request id.
    slowNextStartMs = 12_000;
    const outcome = await (await startCaller(2048)).result();
    expect(outcome.status, JSON.stringify(outcome)).toBe('running');
    const { sandboxes } = await stack.store.listSandboxes(tenant, { limit: 100 });
    expect(sandboxes).toHaveLength(before + 1);
  });

  it("a refused create fails the caller's operation as invalid_request naming the node's reason", async () => {
    const outcome = await (await startCaller(300)).result();
    expect(outcome).toMatchObject({ status: 'failed', code: 'invalid_request' });
    if (outcome.status !== 'failed') return;
    expect(outcome.message).toMatch(
      /node refused the sandbox: .*smaller than cloned rootfs size 451 MiB/,
    );
  });

  it('a create below the floor the refusal taught is refused before anything starts, as invalid_request', async () => {
    // Runs after the refusal above, which taught `base` its 451 MiB floor.
    const before = (await stack.store.listSandboxes(tenant, { limit: 100 })).sandboxes.length;
    const outcome = await (await startCaller(300)).result();
    expect(outcome).toMatchObject({ status: 'failed', code: 'invalid_request' });
    if (outcome.status !== 'failed') return;
    expect(outcome.message).toMatch(/template base needs at least 451 MiB of disk/);
    expect((await stack.store.listSandboxes(tenant, { limit: 100 })).sandboxes).toHaveLength(
      before,
    );
  });

  it("cancelling the caller's workflow cancels the create: its pod is deleted and none is left", async () => {
    stack.cluster.faults.neverReady(true);
    let handle: Awaited<ReturnType<typeof startCaller>>;
    let sandboxId: string | undefined;
    let podName: string | undefined;
    try {
      handle = await startCaller(2048);
      await waitUntil(async () => {
        const { sandboxes } = await stack.store.listSandboxes(tenant, {
          state: 'creating',
          limit: 10,
        });
        const withPod = sandboxes.find((sandbox) => sandbox.pod.name);
        sandboxId = withPod?.id;
        podName = withPod?.pod.name ?? undefined;
        return podName !== undefined;
      });
      await handle.cancel();
      const err = await handle.result().catch((e: unknown) => e);
      expect(err).toBeInstanceOf(WorkflowFailedError);
      expect((err as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    } finally {
      stack.cluster.faults.neverReady(false);
    }
    await waitUntil(
      async () => (await stack.store.getSandbox(tenant, sandboxId!))?.state === 'failed',
    );
    const deletes = stack.cluster.requestsWhere({
      verb: 'delete',
      resource: 'pods',
      name: podName,
    });
    expect(deletes.length).toBeGreaterThanOrEqual(1);
    const pods = await stack.kubernetes.core.listNamespacedPod({ namespace: stack.namespace });
    expect(pods.items.map((pod) => pod.metadata?.name)).not.toContain(podName);
  });

  it('deletes a sandbox of its tenant through the delete operation', async () => {
    const created = await (await startCaller(2048)).result();
    if (created.status !== 'running') throw new Error(JSON.stringify(created));
    const result = await callerClient()
      .workflow.start<typeof deleteSandboxThroughNexus>('deleteSandboxThroughNexus', {
        workflowId: `caller-${randomUUID()}`,
        taskQueue: callerQueue,
        args: [endpoint, created.sandbox.sandboxId],
      })
      .then((handle) => handle.result());
    expect(result).toMatchObject({ sandboxId: created.sandbox.sandboxId, retired: true });
    expect((await stack.store.getSandbox(tenant, created.sandbox.sandboxId))?.state).toBe(
      'deleted',
    );
  });

  it('refuses a caller whose namespace NEXUS_TENANTS does not map', async () => {
    const err = await (
      await startCaller(2048, strangerNamespace)
    )
      .result()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    const failure = (err as WorkflowFailedError).cause;
    expect(failure).toBeInstanceOf(NexusOperationFailure);
    expect(String((failure as NexusOperationFailure).cause?.message)).toContain(
      `the calling namespace ${strangerNamespace} is not mapped to a tenant`,
    );
  });

  it("an unmapped caller's own nexus-link header naming a mapped namespace does not make it that tenant", async () => {
    const before = (await stack.store.listSandboxes(tenant, { limit: 100 })).sandboxes.length;
    const err = await (
      await startCaller(2048, strangerNamespace, { forgedNamespace: callerNamespace })
    )
      .result()
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(
      String(((err as WorkflowFailedError).cause as NexusOperationFailure).cause?.message),
    ).toMatch(/the calling namespace .* is not mapped to a tenant/);
    expect((await stack.store.listSandboxes(tenant, { limit: 100 })).sandboxes).toHaveLength(
      before,
    );
  });
});
