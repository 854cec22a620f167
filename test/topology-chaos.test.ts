/**
 * A bounded part of the fault matrix (environments/topology/fault-matrix.ts) on the production
 * topology, in CI: PostgreSQL of its own, the Temporal server tier (temporal-server v1.29.1 on
 * PostgreSQL, built once like the apiserver tier), the real apiserver tier with the node agent,
 * two API replicas behind the load balancer and two workers, each a process. One run each of a
 * worker SIGKILL mid-wait, a PostgreSQL restart, a Temporal server restart and a kube-apiserver
 * restart (which answers RBAC 403 until its caches have synced, and refuses the node agent's
 * status updates while it is down); every row must be perfect, as the cluster, the store and
 * the API report it. The Temporal server serves mTLS only (a CA of the tier's own): the API
 * replicas, the workers and the UI server connect with client certificates, a client without one
 * is refused. The full matrix is
 * `npm run chaos -- --topology` (docs/production.md).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Connection } from '@temporalio/client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  clientConnectionOptions,
  parseTemporalCredentials,
} from '../src/config/temporal-connection.js';
import { DEV_TOKEN } from '../src/config/index.js';
import { httpStatusOf } from '../src/kubernetes/client.js';
import { sandboxPod } from '../src/kubernetes/pod-spec.js';
import { startTopology, type Topology } from '../environments/topology/index.js';
import { ROOMY_TENANT_LIMITS } from './support/tenant-limits.js';
import { FaultMatrix, type FaultScenario } from '../environments/topology/fault-matrix.js';
import { waitUntil } from '../tools/wait-until.js';

let topology: Topology;
let matrix: FaultMatrix;
// A cold build of the Temporal server tier or the apiserver tier may run in this hook.
beforeAll(async () => {
  topology = await startTopology({
    nodeDelayMs: 1_500,
    env: {
      LOG_LEVEL: 'warn',
      WATCH_RETRY_DELAY_MS: '200',
      ALLOW_DEV_TOKEN: 'true',
      TENANT_LIMITS: ROOMY_TENANT_LIMITS,
    },
    log: process.env.TEST_LOGS ? (line) => process.stderr.write(`${line}\n`) : undefined,
  });
  matrix = new FaultMatrix(topology);
  await matrix.warmUp();
}, 20 * 60_000);
afterAll(async () => {
  await topology?.stop();
}, 120_000);

describe('the fault matrix on the production topology', () => {
  it('runs two API replicas and two workers as processes of their own', () => {
    const pids = [...topology.apis, ...topology.workers].map((service) => service.pid());
    expect(pids.every((pid) => typeof pid === 'number' && pid !== process.pid)).toBe(true);
    expect(new Set(pids).size).toBe(4);
  });

  it('runs the API replicas as an apiserver user granted nothing: the apiserver refuses it a pod', async () => {
    // Each replica's process runs on that kubeconfig (its environment, as the kernel shows it).
    for (const api of topology.apis) {
      const environ = readFileSync(`/proc/${api.pid()}/environ`, 'utf8').split('\0');
      expect(environ, api.name).toContain(`KUBECONFIG=${topology.apiKubeconfigPath}`);
    }
    const kubeconfig = readFileSync(topology.apiKubeconfigPath, 'utf8');
    expect(kubeconfig).toContain('name: durable-sandbox-api');
    const config = new KubeConfig();
    config.loadFromString(kubeconfig);
    const body = sandboxPod({
      sandboxId: `sbx_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      generation: 1,
      template: 'base',
      image: 'example/base:1',
      resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
    });
    const refused = await config
      .makeApiClient(CoreV1Api)
      .createNamespacedPod({ namespace: 'sandboxes', body })
      .then(
        () => 201,
        (err: unknown) => httpStatusOf(err),
      );
    expect(refused).toBe(403);
    // The replicas are ready on it (startTopology waited for /readyz 200).
    for (const api of topology.apis) {
      expect((await fetch(`${api.url}/readyz`)).status, api.name).toBe(200);
    }
  });

  it('serves Temporal over mTLS only: the UI connects with its certificate, a client without one is refused', async () => {
    // The API replicas answered /readyz and the warm-up's creates ran on the workers: both
    // connected with their certificates (environments/topology/index.ts).
    expect(topology.temporal.tls).toBeDefined();
    const namespaces = await fetch(`${topology.temporal.uiUrl}/api/v1/namespaces`);
    expect(namespaces.status).toBe(200);
    expect(await namespaces.text()).toContain(`"${topology.temporal.namespace}"`);
    const { tls } = parseTemporalCredentials(await topology.temporal.clientEnv('test-probe'));
    const { clientCert: _none, ...withoutCertificate } = tls!;
    const refused = Connection.connect({
      ...clientConnectionOptions(topology.temporal.address, { tls: withoutCertificate }),
      connectTimeout: 5_000,
    }).then(async (connection) => {
      try {
        return await connection.healthService.check({});
      } finally {
        await connection.close();
      }
    });
    await expect(refused).rejects.toThrow();
  });

  it('a lifetime survives a worker SIGKILL and a Temporal server restart: the sandbox is deleted when it expires, cause expired', async () => {
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${topology.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${DEV_TOKEN}`, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      });
      return { status: response.status, json: (await response.json()) as Record<string, unknown> };
    };
    const readSandbox = async (id: string) =>
      (await call('GET', `/v1/sandboxes/${id}`).catch(() => undefined))?.json;
    const created = await call('POST', '/v1/sandboxes', {
      template: 'base',
      resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
      ttl: '25s',
    });
    expect(created.status, JSON.stringify(created.json)).toBe(202);
    const sandboxId = created.json.sandbox_id as string;
    // A read failing while a part restarts counts as "not yet".
    const sandbox = await waitUntil(
      async () => {
        const json = await readSandbox(sandboxId);
        return json?.state === 'running' ? json : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250, what: `${sandboxId} running` },
    );
    const expireAtMs = Date.parse(sandbox.expire_time as string);
    // Before it expires: every worker SIGKILLed (their supervisors start them again), then the
    // Temporal server stopped and started.
    for (const worker of topology.workers) worker.kill();
    await topology.temporal.stopServer();
    await topology.temporal.startServer();
    expect(Date.now()).toBeLessThan(expireAtMs);
    const deleted = await waitUntil(
      async () => {
        const json = await readSandbox(sandboxId);
        return json?.state === 'deleted' ? json : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250, what: `the expiry of ${sandboxId}` },
    );
    expect(deleted.state).toBe('deleted');
    const { json: page } = await call('GET', '/v1/operations?limit=200');
    const expiry = (page.operations as Array<Record<string, unknown>>).find(
      (op) => op.sandbox_id === sandboxId && op.type === 'sandbox.delete',
    );
    expect(expiry).toMatchObject({ cause: 'expired', status: 'succeeded' });
    expect(Date.parse(expiry?.created_at as string)).toBeGreaterThanOrEqual(expireAtMs);
    // Its pod is gone from the real apiserver.
    const admin = new KubeConfig();
    admin.loadFromFile(topology.adminKubeconfigPath);
    const podName = (sandbox.pod as { name: string }).name;
    const status = await admin
      .makeApiClient(CoreV1Api)
      .readNamespacedPod({ namespace: 'sandboxes', name: podName })
      .then(
        (pod) => (pod.metadata?.deletionTimestamp ? 'terminating' : 'present'),
        (err: unknown) => String(httpStatusOf(err)),
      );
    expect(['404', 'terminating']).toContain(status);
  }, 300_000);

  it.each<[FaultScenario, string]>([
    ['worker-kill', 'a worker SIGKILLed while its create waits for the IP'],
    ['postgres-restart', 'PostgreSQL restarted while creates wait'],
    ['temporal-restart', 'the Temporal server restarted while creates wait'],
    ['apiserver-restart', 'kube-apiserver restarted (same etcd) while creates wait'],
  ])(
    '%s: %s; every create succeeds, nothing stuck, leaked or unretired, no 5xx',
    async (scenario) => {
      const starts = topology.workers.map((worker) => worker.starts());
      const row = await matrix.run(scenario, 1);
      expect(row).toMatchObject({
        runs: row.runs,
        correct: row.runs,
        stuck: 0,
        leaked: 0,
        unretired: 0,
        unexpected5xx: 0,
      });
      expect(row.runs).toBeGreaterThan(0);
      if (scenario === 'worker-kill') {
        // The kill happened: its supervisor started the worker again.
        expect(topology.workers.map((worker) => worker.starts())).not.toEqual(starts);
      }
    },
    600_000,
  );
});
