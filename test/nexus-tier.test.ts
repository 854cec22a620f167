/**
 * The `sandbox` Nexus service (docs/nexus.md) where it is deployed: on the Temporal server tier
 * (environments/temporal-tier: temporal-server v1.29.1 on a PostgreSQL of its own, mTLS, the
 * dynamic config of environments/temporal-tier/dynamicconfig.yaml that docker-compose.yml and
 * deploy/temporal-setup.yaml carry), not the dev server, which sets Nexus up itself. A caller's
 * workflow in a second namespace creates a sandbox through an endpoint and gets it running: the
 * create's result comes back through the completion callback, which the shipped dynamic config
 * must allow (component.callbacks.allowedAddresses) and address
 * (component.nexusoperations.callback.endpoint.template). The create worker serving the service,
 * the simulated cluster over HTTP, SQLite. Removing either key from the shipped file fails it:
 * without the template the operation times out, without the allowed address the create's start
 * is refused.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import {
  clientConnectionOptions,
  nativeConnectionOptions,
  parseTemporalCredentials,
} from '../src/config/temporal-connection.js';
import {
  startPostgresInstance,
  type PostgresInstance,
} from '../environments/postgresql/instance.js';
import { startTemporalTier, type TemporalTier } from '../environments/temporal-tier/launcher.js';
import type { createSandboxThroughNexus } from '../clients/examples/nexus-caller/workflows.js';
import { runSandboxWorker, type RunningSandboxWorker } from '../src/worker/sandbox-worker.js';
import { waitUntil } from '../tools/wait-until.js';
import { startTestStack, type TestStack } from './support/stack.js';

const suffix = randomUUID().replace(/-/g, '').slice(0, 12);
const callerNamespace = `nexus-caller-${suffix}`;
const endpoint = `sandbox-${suffix}`;
const tenant = `nexus-tenant-${suffix}`;
const callerQueue = `nexus-caller-${suffix}`;

let postgres: PostgresInstance | undefined;
let tier: TemporalTier | undefined;
let stack: TestStack | undefined;
let connection: Connection | undefined;
let nativeConnection: NativeConnection | undefined;
let handlerWorker: RunningSandboxWorker | undefined;
let caller: { worker: Worker; run: Promise<void> } | undefined;

// A cold build of the tier's binaries may run in this hook (they are cached afterwards).
beforeAll(async () => {
  postgres = await startPostgresInstance();
  const admin = new URL(postgres.url());
  tier = await startTemporalTier({
    database: {
      host: admin.hostname,
      port: Number(admin.port),
      user: decodeURIComponent(admin.username),
      password: decodeURIComponent(admin.password),
    },
    ui: false,
  });
  const credentials = parseTemporalCredentials(await tier.clientEnv('nexus-tier-test'));
  connection = await Connection.connect(clientConnectionOptions(tier.address, credentials));
  nativeConnection = await NativeConnection.connect(
    nativeConnectionOptions(tier.address, credentials),
  );
  // The store, the simulated cluster and the workflow bundle; no worker of the dev server.
  stack = await startTestStack({ worker: false });
  await connection.workflowService.registerNamespace({
    namespace: callerNamespace,
    workflowExecutionRetentionPeriod: msToTs('1 day'),
  });
  await connection.operatorService.createNexusEndpoint({
    spec: {
      name: endpoint,
      target: { worker: { namespace: tier.namespace, taskQueue: stack.taskQueue } },
    },
  });
  const config = loadConfig({
    API_TOKENS: `unused:${randomUUID()}`,
    TEMPORAL_TASK_QUEUE: stack.taskQueue,
    CREATE_DEADLINE_MS: '60000',
    NEXUS_TENANTS: `${callerNamespace}:${tenant}`,
  });
  handlerWorker = await runSandboxWorker({
    connection: nativeConnection,
    namespace: tier.namespace,
    taskQueue: stack.taskQueue,
    kubernetes: stack.kubernetes,
    store: stack.store,
    client: new Client({ connection, namespace: tier.namespace }),
    logger: stack.logger,
    watchRetryDelayMs: 100,
    watchTimeoutSeconds: 25,
    templates: stack.templates,
    worker: {
      workflowBundle: stack.temporal.workflowBundle,
      shutdownGraceTimeMs: 2_000,
      nexus: { store: stack.store, config, logger: stack.logger, tenants: config.nexusTenants },
    },
  });
  // A new namespace reaches every service of the server within seconds (its registry refresh).
  let worker: Worker | undefined;
  await waitUntil(
    async () => {
      worker = await Worker.create({
        connection: nativeConnection!,
        namespace: callerNamespace,
        taskQueue: callerQueue,
        workflowBundle: stack!.temporal.workflowBundle,
      }).catch(() => undefined);
      return worker !== undefined;
    },
    { timeoutMs: 60_000 },
  );
  caller = { worker: worker!, run: worker!.run() };
}, 15 * 60_000);

afterAll(async () => {
  if (caller?.worker.getState() === 'RUNNING') caller.worker.shutdown();
  await caller?.run.catch(() => undefined);
  await handlerWorker?.stop();
  await nativeConnection?.close();
  await connection?.close();
  await stack?.stop();
  await tier?.stop();
  await postgres?.stop();
}, 120_000);

describe('the sandbox Nexus service on the Temporal server tier', () => {
  it("a caller's workflow in another namespace creates a sandbox with a ttl and labels and gets it running, through the completion callback", async () => {
    const handle = await new Client({
      connection: connection!,
      namespace: callerNamespace,
    }).workflow.start<typeof createSandboxThroughNexus>('createSandboxThroughNexus', {
      workflowId: `caller-${randomUUID()}`,
      taskQueue: callerQueue,
      // Far below the create's own deadline: a lost callback fails the test within minutes.
      args: [
        endpoint,
        {
          template: 'base',
          resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
          ttl: '600s',
          labels: { team: 'tier' },
        },
        '3 minutes',
      ],
    });
    const outcome = await handle.result().catch((err: unknown) => ({
      status: 'error' as const,
      error: String(err),
      cause: String((err as { cause?: { cause?: unknown } }).cause?.cause ?? ''),
    }));
    expect(outcome.status, JSON.stringify(outcome)).toBe('running');
    if (outcome.status !== 'running') return;
    const sandbox = await stack!.store.getSandbox(tenant, outcome.sandbox.sandboxId);
    expect(sandbox?.state).toBe('running');
    expect(outcome.sandbox.pod.ip).toBe(sandbox?.pod.ip);
    expect(outcome.sandbox).toMatchObject({ ttl: '600s', labels: { team: 'tier' } });
    expect(sandbox?.labels).toEqual({ team: 'tier' });
  }, 300_000);
});
