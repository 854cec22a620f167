/**
 * What one cached workflow costs the worker's memory (docs/architecture.md, "Workflow cache"):
 * one process runs the worker (real activities, informers, decider) on its own dev server and
 * simulated cluster whose node never decides, starts N creates, waits until all N wait, and
 * prints its RSS. Run it twice, with the cache large enough for all N and with the cache off,
 * and divide the difference by N:
 *
 *     nice -n 10 npx tsx scripts/measure-workflow-cache.ts --creates 300 --max-cached 1000
 *     nice -n 10 npx tsx scripts/measure-workflow-cache.ts --creates 300 --max-cached 0
 *
 * Prints one JSON line: creates, maxCached, rssMiB (after a GC), heapUsedMiB, cachedWorkflows
 * (the SDK's own gauge is not read: the worker's status counts what it holds).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { pino } from 'pino';
import { Command } from 'commander';
import { createMetrics } from '../activities/metrics.js';
import { ReadinessDecider } from '../activities/readiness-decider.js';
import { createKubernetesClient } from '../kubernetes/client.js';
import { SandboxInformers } from '../kubernetes/sandbox-informers.js';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { openStore } from '../store/index.js';
import { createSandboxWorker } from '../worker/worker.js';
import { operationSearchAttributes } from '../workflows/search-attributes.js';
import type { CreateSandboxInput } from '../contract/index.js';
import { startDevServer } from './dev-server.js';

const options = new Command()
  .option('--creates <n>', 'waiting creates', '300')
  .option('--max-cached <n>', "the worker's maxCachedWorkflows", '1000')
  .parse()
  .opts<{ creates: string; maxCached: string }>();
const creates = Number(options.creates);
const maxCached = Number(options.maxCached);

const logger = pino({ level: 'warn' });
const dataDir = mkdtempSync(join(tmpdir(), 'measure-cache-'));
const devServer = await startDevServer({ ui: false });
const cluster = await SimulatedCluster.start({ startupDelayMs: 100 });
cluster.faults.neverReady(true);
const kubernetes = createKubernetesClient({
  kubeconfigYaml: cluster.kubeconfigYaml(),
  namespace: 'sandboxes',
});
const store = await openStore({ sqliteFile: join(dataDir, 'store.db') });
const connection = await Connection.connect({ address: devServer.address });
const client = new Client({ connection });
const nativeConnection = await NativeConnection.connect({ address: devServer.address });
const informers = new SandboxInformers({
  client: kubernetes,
  retryDelayMs: 1_000,
  watchTimeoutSeconds: 25,
  logger,
  observer: createMetrics().watchObserver,
});
const decider = new ReadinessDecider({ informers, store, client, logger });
decider.start();
informers.start();
const taskQueue = `measure-${randomUUID()}`;
const worker = await createSandboxWorker({
  connection: nativeConnection,
  namespace: 'default',
  taskQueue,
  deps: { kubernetes, store, informers, decider, metrics: createMetrics() },
  maxCachedWorkflows: maxCached,
});
const running = worker.run();

for (let i = 0; i < creates; i += 1) {
  const suffix = randomUUID().replace(/-/g, '').slice(0, 20);
  const input: CreateSandboxInput = {
    operationId: `op_${suffix}`,
    sandboxId: `sbx_${suffix}`,
    tenantId: 'tenant-a',
    template: 'base',
    image: 'example/base:1',
    resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
    generation: 1,
    attempt: 1,
    deadlineMs: 1_800_000,
  };
  await store.createSandbox({
    id: input.sandboxId,
    tenant: input.tenantId,
    template: input.template,
    resources: input.resources,
    operationId: input.operationId,
  });
  await client.workflow.start('createSandbox', {
    workflowId: input.operationId,
    taskQueue,
    args: [input],
    typedSearchAttributes: operationSearchAttributes(input, 'create'),
  });
}
for (;;) {
  const waits = await store.listReadinessWaits();
  if (waits.length >= creates) break;
  await new Promise((resolve) => setTimeout(resolve, 1_000));
}
// Let the last workflow tasks settle, then measure after a GC (when --expose-gc is on).
await new Promise((resolve) => setTimeout(resolve, 5_000));
(globalThis as { gc?: () => void }).gc?.();
const memory = process.memoryUsage();
console.log(
  JSON.stringify({
    creates,
    maxCached,
    rssMiB: Math.round(memory.rss / 2 ** 20),
    heapUsedMiB: Math.round(memory.heapUsed / 2 ** 20),
    cachedWorkflows: worker.getStatus().numCachedWorkflows,
  }),
);

worker.shutdown();
await running;
await informers.stop();
await decider.stop();
await nativeConnection.close();
await connection.close();
await store.close();
await cluster.close();
await devServer.stop();
rmSync(dataDir, { recursive: true, force: true });
