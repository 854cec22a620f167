/**
 * Upgrades with creates in flight (docs/testing.md, "Upgrades with creates in flight"): creates
 * started by the release before's worker (a `git worktree` of the commit in RELEASE_BEFORE, run
 * as `src/worker/main.ts` of that checkout) finish correctly on this checkout's worker after the old
 * worker is killed mid-create. The API and the store are this release's; the Temporal dev
 * server and the simulated cluster are the run's, shared by both workers.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Express } from 'express';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/api/app.js';
import { loadConfig } from '../src/config/index.js';
import { createKubernetesClient, type KubernetesClient } from '../src/kubernetes/client.js';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { openStore, type Store, type StoreOptions } from '../src/store/index.js';
import {
  checkoutRelease,
  releaseBeforeCommit,
  REPO_ROOT,
  type ReleaseCheckout,
} from '../tools/release-before.js';
import { startWorkerProcess, type WorkerProcess } from '../tools/worker-process.js';
import { freshPostgresTarget, type StoreTarget } from './support/store.js';
import {
  connectToTestServer,
  uniqueTaskQueue,
  type TemporalTestContext,
} from './support/temporal.js';
import { waitUntil } from '../tools/wait-until.js';

const NAMESPACE = 'sandboxes';
const TOKEN = 'upgrade-token';
const AUTH = { Authorization: `Bearer ${TOKEN}` };
const REFUSAL_MESSAGE =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
  'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';

interface OperationJson {
  id: string;
  sandbox_id: string;
  status: string;
  phase: string;
  done: boolean;
  error: { code: string; message: string } | null;
  result: { sandbox: { state: string; pod: { ip: string } } } | null;
}

describe('upgrade with creates in flight', () => {
  let release: ReleaseCheckout;
  let temporal: TemporalTestContext;
  let cluster: SimulatedCluster;
  let kubernetes: KubernetesClient;
  let store: Store | undefined;
  let postgres: StoreTarget | undefined;
  let dataDir: string;
  const workers: WorkerProcess[] = [];

  beforeAll(async () => {
    release = checkoutRelease(releaseBeforeCommit());
    temporal = await connectToTestServer();
    cluster = await SimulatedCluster.start({ startupDelayMs: 100 });
    kubernetes = createKubernetesClient({
      kubeconfigYaml: cluster.kubeconfigYaml(),
      namespace: NAMESPACE,
    });
    dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-upgrade-'));
    if (process.env.TEST_DATABASE_URL) {
      postgres = await freshPostgresTarget(process.env.TEST_DATABASE_URL);
    }
  }, 600_000);

  afterAll(async () => {
    for (const worker of workers) await worker.kill();
    await store?.close();
    await postgres?.dispose();
    await cluster?.close();
    await temporal?.close();
    release?.remove();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('finishes creates the old worker left waiting, refused and compensating', async () => {
    const taskQueue = uniqueTaskQueue('upgrade');
    const kubeconfig = join(dataDir, 'kubeconfig');
    cluster.writeKubeconfig(kubeconfig);
    const storeOptions: StoreOptions = postgres?.options ?? {
      sqliteFile: join(dataDir, 'store.db'),
    };
    const workerOptions = {
      temporalAddress: temporal.address,
      taskQueue,
      kubeconfig,
      dataDir,
      databaseUrl: storeOptions.databaseUrl,
    };
    cluster.faults.neverReady(true); // the node acts only when the test says so

    // The old worker opens (and migrates) the store first, as a rolling upgrade finds it.
    const oldWorker = await startWorkerProcess({ cwd: release.dir, ...workerOptions });
    workers.push(oldWorker);
    store = await openStore(storeOptions);
    const app = createApp({
      temporal: temporal.client,
      store,
      config: loadConfig({
        API_TOKENS: `upgrade:${TOKEN}`,
        TEMPORAL_TASK_QUEUE: taskQueue,
        CREATE_DEADLINE_MS: '600000',
      }),
      logger: pino({ level: 'silent' }),
      kubernetes,
    });
    const waiting = await postCreate(app, 2048);
    const refused = await postCreate(app, 300);
    const compensating = await postCreate(app, 2048);
    await waitUntil(
      async () =>
        (await Promise.all([waiting, refused, compensating].map((op) => getOperation(app, op.id))))
          .map((operation) => operation.phase)
          .every((phase) => phase === 'waiting_for_ip'),
      { timeoutMs: 120_000 },
    );
    const podOf = async (operation: OperationJson) =>
      (await store!.getSandboxById(operation.sandbox_id))?.pod.name ?? '';
    const pods = {
      waiting: await podOf(waiting),
      refused: await podOf(refused),
      compensating: await podOf(compensating),
    };
    const deletesOf = (pod: string) =>
      cluster.requestsWhere({ verb: 'delete', resource: 'pods', name: pod });

    // (c) cancelled while waiting; its pod delete fails, so it is still compensating.
    cluster.faults.failNextRequests('DELETE', 'pods', 3, 500);
    expect(
      (await request(app).post(`/v1/operations/${compensating.id}/cancel`).set(AUTH)).status,
    ).toBe(202);
    await waitUntil(() => deletesOf(pods.compensating).length > 0, { timeoutMs: 60_000 });
    const beforeKill = await getOperation(app, compensating.id);
    expect(beforeKill).toMatchObject({ status: 'cancelled', phase: 'compensating', done: false });

    await oldWorker.kill();
    expect(deletesOf(pods.compensating).map((r) => r.status)).not.toContain(200);
    const deletesBeforeSwap = deletesOf(pods.compensating).length;
    // (b) the node refuses the disk while no worker runs.
    cluster.node.recordSandboxFailure(NAMESPACE, pods.refused, REFUSAL_MESSAGE);

    const newWorker = await startWorkerProcess({ cwd: REPO_ROOT, ...workerOptions });
    workers.push(newWorker);
    await waitUntil(() => cluster.openWatches() === 2, { timeoutMs: 120_000 });
    // (a) the pod gets its IP once this release's worker watches.
    cluster.node.makeReady(NAMESPACE, pods.waiting);

    const done = async (id: string) => {
      let operation = await getOperation(app, id);
      await waitUntil(
        async () => {
          // A workflow change the old histories do not replay fails every workflow task.
          const violation = /[^\n]*Nondeterminism error[^\n]*/.exec(newWorker.output());
          if (violation) throw new Error(`this release's worker cannot replay: ${violation[0]}`);
          return (operation = await getOperation(app, id)).done;
        },
        { timeoutMs: 180_000 },
      );
      return operation;
    };
    const ran = await done(waiting.id);
    const failed = await done(refused.id);
    const cancelled = await done(compensating.id);
    expect(ran).toMatchObject({ status: 'succeeded', phase: 'finished', error: null });
    expect(ran.result?.sandbox).toMatchObject({
      state: 'running',
      pod: { ip: expect.stringMatching(/^10\./) },
    });
    expect(failed).toMatchObject({ status: 'failed', phase: 'finished' });
    expect(failed.error).toMatchObject({
      code: 'invalid_request',
      message: expect.stringContaining(
        'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
      ),
    });
    expect(cancelled).toMatchObject({
      status: 'cancelled',
      phase: 'finished',
      error: { code: 'cancelled' },
    });
    // The compensation the old worker began was finished by the new one.
    const compensatingDeletes = deletesOf(pods.compensating).map((r) => r.status);
    expect(compensatingDeletes.slice(deletesBeforeSwap)).toContain(200);

    // No pod leaked: only the running sandbox's pod is left.
    const left = await kubernetes.core.listNamespacedPod({ namespace: NAMESPACE });
    expect(left.items.map((pod) => pod.metadata?.name)).toEqual([pods.waiting]);
    // Executions retired: the store's (a second retirement is a no-op) and Temporal's (closed).
    for (const operation of [failed, cancelled]) {
      expect(await store.getSandboxById(operation.sandbox_id)).toMatchObject({ state: 'failed' });
      expect(
        await store.retireExecution({
          sandboxId: operation.sandbox_id,
          generation: 1,
          attempt: 1,
          reason: 'again',
          failure: { code: 'internal', message: 'again' },
        }),
      ).toEqual({ retired: false });
    }
    for (const operation of [ran, failed, cancelled]) {
      const handle = temporal.client.workflow.getHandle(operation.id);
      expect((await handle.describe()).status.name).toBe(
        operation === ran ? 'COMPLETED' : operation === failed ? 'FAILED' : 'CANCELLED',
      );
      // In flight across the swap: the old worker ran its first workflow tasks, the new one
      // its last.
      const identities =
        (await handle.fetchHistory()).events?.flatMap((event) =>
          [
            event.workflowTaskCompletedEventAttributes?.identity ?? [],
            event.activityTaskStartedEventAttributes?.identity ?? [],
          ].flat(),
        ) ?? [];
      expect(identities[0]).toMatch(new RegExp(`^${oldWorker.pid}@`));
      expect(identities.at(-1)).toMatch(new RegExp(`^${newWorker.pid}@`));
    }
    expect(newWorker.output()).not.toMatch(/nondeterminis/i);
  }, 900_000);
});

/**
 * POST /v1/sandboxes; a 503 `unavailable` (a readiness check that timed out on a loaded machine)
 * is retried for up to 60 s, as a client would after its Retry-After.
 */
async function postCreate(app: Express, diskMib: number): Promise<OperationJson> {
  const response = await waitUntil(
    async () => {
      const answer = await request(app)
        .post('/v1/sandboxes')
        .set(AUTH)
        .send({ template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: diskMib } });
      const unavailable = answer.status === 503 && answer.body?.error?.code === 'unavailable';
      return unavailable ? undefined : answer;
    },
    { timeoutMs: 60_000, intervalMs: 1_000, what: 'POST /v1/sandboxes answering other than 503' },
  );
  expect(response.status, JSON.stringify(response.body)).toBe(202);
  return response.body as OperationJson;
}

async function getOperation(app: Express, id: string): Promise<OperationJson> {
  const response = await request(app).get(`/v1/operations/${id}`).set(AUTH);
  expect(response.status).toBe(200);
  return response.body as OperationJson;
}
