/**
 * What one cached workflow costs the worker, and what a cache miss costs (docs/architecture.md,
 * "Workflow cache"). One process runs the worker (real activities, informers, decider) on its
 * own dev server and a simulated cluster whose node never decides, starts creates until each
 * checkpoint's count waits (recorded in `readiness_waits`), and at each checkpoint prints the
 * process's RSS and heap after a GC. Run it once with the cache large enough for every create
 * and once with the cache off; the RSS difference at a checkpoint, divided by its count, is the
 * cost of one cached workflow:
 *
 *     nice -n 19 node --expose-gc --import tsx tools/measure-workflow-cache.ts --max-cached 1000
 *     nice -n 19 node --expose-gc --import tsx tools/measure-workflow-cache.ts --max-cached 0
 *
 * Then it cancels `--sample` waiting creates one after another and times each from the cancel to
 * the workflow's close: a cached workflow runs the cancel's workflow task at once; an evicted one
 * is first replayed from its history (whose length it prints). The SDK's own counters (sticky
 * cache hits and misses, replay latency) come from its Prometheus exporter.
 *
 * Prints one JSON line per checkpoint (`{ waiting, maxCached, rssMiB, heapUsedMiB,
 * cachedWorkflows }`) and one for the sample (`{ sample, historyEvents, cancelToClose{p50Ms,
 * maxMs}, sdk }`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { pino } from 'pino';
import { Command } from 'commander';
import { createKubernetesClient } from '../src/kubernetes/client.js';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { openStore, type Store } from '../src/store/index.js';
import { installRuntime } from '../src/worker/runtime.js';
import { runSandboxWorker } from '../src/worker/sandbox-worker.js';
import { startCreate } from './start-create.js';
import { startDevServer } from '../environments/dev-server/dev-server.js';
import { DEFAULT_TEMPLATES } from '../src/config/index.js';

const options = new Command()
  .option('--checkpoints <list>', 'waiting creates at which memory is read', '0,250,500,1000')
  .option('--max-cached <n>', "the worker's maxCachedWorkflows", '1000')
  .option('--sample <n>', 'waiting creates cancelled one by one to time a cache miss', '20')
  .option('--in-flight <n>', 'creates started but not yet waiting, at most', '10')
  .parse()
  .opts<{ checkpoints: string; maxCached: string; sample: string; inFlight: string }>();
const checkpoints = options.checkpoints.split(',').map(Number);
const maxCached = Number(options.maxCached);
const sampleSize = Number(options.sample);
const inFlight = Number(options.inFlight);

const logger = pino({ level: 'warn' });
const metricsPort = await freePort();
installRuntime(logger, { prometheusBindAddress: `127.0.0.1:${metricsPort}` });
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
const taskQueue = `measure-${randomUUID()}`;
// Built as every worker is (src/worker/sandbox-worker.ts).
const started = await runSandboxWorker({
  connection: nativeConnection,
  namespace: 'default',
  taskQueue,
  kubernetes,
  store,
  client,
  logger,
  watchRetryDelayMs: 1_000,
  watchTimeoutSeconds: 25,
  templates: DEFAULT_TEMPLATES,
  worker: { maxCachedWorkflows: maxCached },
});
const { worker } = started;
const target = { store, temporal: { client }, taskQueue };

const handles: Array<WorkflowHandle> = [];
for (const count of checkpoints) {
  const startedAt = Date.now();
  // A bounded window of creates between their start and their wait for an IP: on a loaded
  // machine an unbounded burst times createPod out and the fill never ends.
  for (;;) {
    const waiting = await countWaits(store);
    if (waiting >= count) break;
    const room = Math.min(inFlight - (handles.length - waiting), count - handles.length);
    for (let i = 0; i < room; i += 1) {
      const { handle } = await startCreate(target, { diskMib: 2048, deadlineMs: 3_600_000 });
      handles.push(handle);
    }
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  // Let the last workflow tasks settle, then measure after a GC (with --expose-gc).
  await new Promise((resolve) => setTimeout(resolve, 5_000));
  (globalThis as { gc?: () => void }).gc?.();
  const memory = process.memoryUsage();
  console.log(
    JSON.stringify({
      waiting: count,
      maxCached,
      rssMiB: mib(memory.rss),
      heapUsedMiB: mib(memory.heapUsed),
      cachedWorkflows: worker.getStatus().numCachedWorkflows,
      fillSeconds: Math.round((Date.now() - startedAt) / 1000),
    }),
  );
}

const sample = handles.slice(0, sampleSize);
if (sample.length > 0) {
  const history = await (sample[0] as WorkflowHandle).fetchHistory();
  const before = await sdkMetrics(metricsPort);
  const latencies: number[] = [];
  for (const handle of sample) {
    const began = Date.now();
    await handle.cancel();
    await handle.result().catch(() => undefined);
    latencies.push(Date.now() - began);
  }
  const after = await sdkMetrics(metricsPort);
  latencies.sort((a, b) => a - b);
  console.log(
    JSON.stringify({
      sample: sample.length,
      maxCached,
      historyEvents: history.events?.length ?? 0,
      cancelToClose: {
        p50Ms: latencies[Math.floor(latencies.length / 2)],
        maxMs: latencies[latencies.length - 1],
      },
      sdk: Object.fromEntries(
        Object.entries(after).map(([name, value]) => [name, round(value - (before[name] ?? 0))]),
      ),
    }),
  );
}

await started.stop();
await nativeConnection.close();
await connection.close();
await store.close();
await cluster.close();
await devServer.stop();
rmSync(dataDir, { recursive: true, force: true });

/** How many creates the store says wait for their pod's IP. */
async function countWaits(waits: Store): Promise<number> {
  return (await waits.listWaitingPods({ limit: 1_000_000 })).length;
}

/**
 * The SDK's sticky-cache and workflow-task series, summed over their labels, from its
 * Prometheus exporter: `name` → value (a histogram's `_sum` in s and `_count`).
 */
async function sdkMetrics(port: number): Promise<Record<string, number>> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  const wanted =
    /^(temporal_(sticky_cache\w*|workflow_task_(replay|execution)_latency\w*_(sum|count)))(\{[^}]*\})? ([0-9.e+-]+)$/;
  const sums: Record<string, number> = {};
  for (const line of text.split('\n')) {
    const match = wanted.exec(line);
    if (match?.[1]) sums[match[1]] = (sums[match[1]] ?? 0) + Number(match[6]);
  }
  return sums;
}

function mib(bytes: number): number {
  return Math.round(bytes / 2 ** 20);
}

function round(value: number): number {
  return Math.round(value * 1000) / 1000;
}

/** A TCP port free on 127.0.0.1 now. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address ? address.port : 0));
    });
  });
}
