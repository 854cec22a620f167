/**
 * `npm run bench -- waits`: what waiting creates cost the apiserver and the worker
 * (docs/benchmarks.md). In this process: a Temporal dev server, the simulated cluster (its request log
 * counts what the apiserver saw; its node never starts the pods: a never-ready template) and
 * a SQLite store. The worker under test is `worker/main.ts` as a child process (so its RSS is
 * its own), run twice in the same run: this checkout (one informer pair per worker) and, as
 * the baseline, the worker of the checkout at BASELINE_DIR when set (e.g. a checkout of a
 * commit before the informers, with per-create watches; its store schema must match this
 * one's, since both workers share the store), each on its own task queue. For 1, 100 and 1,000 waiting creates (baseline: 1 and 100) it reports:
 * open watches, apiserver requests per minute over a window after all waits started (total,
 * and per waiting create), the worker's RSS, and the refusal latency (refusal event recorded
 * → workflow failed) for 1 and 100 refusals at once. `BENCH_WAITS` (default `1,100,1000`) and
 * `BENCH_WINDOW_MS` (default 60000) shrink a smoke run. Every refused create's workflow must
 * fail (else a problem, exit 1).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import { tmpdir } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { join, resolve } from 'node:path';
import { Client, Connection, type WorkflowHandle } from '@temporalio/client';
import { freePort } from '../../config/free-port.js';
import { createKubernetesClient } from '../../kubernetes/client.js';
import { createPod } from '../../kubernetes/pods.js';
import { SandboxInformers } from '../../kubernetes/sandbox-informers.js';
import { SimulatedCluster } from '../../simulated-cluster/index.js';
import { openStore, type Store } from '../../store/index.js';
import { operationSearchAttributes } from '../../workflows/search-attributes.js';
import type { CreateSandboxInput } from '../../contract/index.js';
import { startDevServer } from '../dev-server.js';
import { memoryMib, problems, sleep, summary, until, type Summary } from './support.js';

const NAMESPACE = 'sandboxes';
const REFUSAL =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
  'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';
const WINDOW_MS = Number(process.env.BENCH_WINDOW_MS ?? 60_000);

interface Context {
  cluster: SimulatedCluster;
  client: Client;
  store: Store;
  dataDir: string;
  temporalAddress: string;
}

interface Row {
  worker: 'informers' | 'baseline';
  waiting: number;
  watches_open: number;
  requests_per_min: number;
  requests_per_waiting_create_per_min: number;
  worker_rss_mib: number;
  refusal_latency_1_at_once_ms?: Summary;
  refusal_latency_100_at_once_ms?: Summary;
}

/** Starts `worker/main.ts` of `checkout` on `taskQueue`; resolves with the child. */
async function startWorker(
  ctx: Context,
  checkout: string,
  taskQueue: string,
): Promise<ChildProcess> {
  const kubeconfig = join(ctx.dataDir, 'kubeconfig');
  ctx.cluster.writeKubeconfig(kubeconfig);
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts'], {
    cwd: checkout,
    env: {
      ...process.env,
      TEMPORAL_ADDRESS: ctx.temporalAddress,
      TEMPORAL_TASK_QUEUE: taskQueue,
      KUBECONFIG: kubeconfig,
      SANDBOX_NAMESPACE: NAMESPACE,
      DATA_DIR: ctx.dataDir,
      METRICS_PORT: String(await freePort()),
      ORPHAN_SWEEP_INTERVAL_MS: '0',
      LOG_LEVEL: 'error',
      LOG_FORMAT: 'json',
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  return child;
}

async function startCreates(ctx: Context, taskQueue: string, count: number) {
  const creates: Array<{ handle: WorkflowHandle; input: CreateSandboxInput }> = [];
  for (let i = 0; i < count; i++) {
    const suffix = randomUUID().replace(/-/g, '').slice(0, 20);
    const input: CreateSandboxInput = {
      operationId: `op_${suffix}`,
      sandboxId: `sbx_${suffix}`,
      tenantId: 'bench',
      template: 'base',
      image: 'example/base:1',
      resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
      generation: 1,
      attempt: 1,
      deadlineMs: 3_600_000,
    };
    await ctx.store.createSandbox({
      id: input.sandboxId,
      tenant: input.tenantId,
      template: input.template,
      resources: input.resources,
      operationId: input.operationId,
    });
    const handle = await ctx.client.workflow.start('createSandbox', {
      workflowId: input.operationId,
      taskQueue,
      args: [input],
      typedSearchAttributes: operationSearchAttributes(input, 'create'),
    });
    creates.push({ handle, input });
  }
  return creates;
}

async function podNameOf(ctx: Context, sandboxId: string): Promise<string | undefined> {
  return (await ctx.store.getSandboxById(sandboxId))?.pod?.name ?? undefined;
}

/** One worker flavour: 1, 100 (and 1,000) waiting creates, then refusals. */
async function measure(
  ctx: Context,
  flavour: Row['worker'],
  checkout: string,
  sizes: number[],
): Promise<Row[]> {
  const rows: Row[] = [];
  const taskQueue = `bench-waits-${flavour}-${randomUUID().slice(0, 8)}`;
  const worker = await startWorker(ctx, checkout, taskQueue);
  try {
    let waiting: Array<{ handle: WorkflowHandle; input: CreateSandboxInput }> = [];
    for (const size of sizes) {
      waiting = waiting.concat(await startCreates(ctx, taskQueue, size - waiting.length));
      // Every wait has its pod recorded (the wait starts right after).
      await until(
        async () => {
          for (const { input } of waiting.slice(-20)) {
            if (!(await podNameOf(ctx, input.sandboxId))) return false;
          }
          return true;
        },
        600_000,
        `${size} pods recorded`,
      );
      await sleep(5_000); // the waits subscribe / open their watches
      const from = ctx.cluster.requests.length;
      const watchesAtStart = ctx.cluster.openWatches();
      await sleep(WINDOW_MS);
      const requests = ctx.cluster.requests.length - from;
      const perMin = (requests * 60_000) / WINDOW_MS;
      const row: Row = {
        worker: flavour,
        waiting: size,
        watches_open: Math.max(watchesAtStart, ctx.cluster.openWatches()),
        requests_per_min: Math.round(perMin * 10) / 10,
        requests_per_waiting_create_per_min: Math.round((perMin / size) * 100) / 100,
        worker_rss_mib: memoryMib(worker.pid as number, 'VmRSS'),
      };
      rows.push(row);
      console.log(JSON.stringify(row));
    }
    // Refusal latency: one refusal, then 100 at once (as many as remain), among the waits.
    for (const batch of [1, 100] as const) {
      const targets =
        batch === 1 ? waiting.slice(-1) : waiting.slice(0, Math.min(100, waiting.length - 1));
      if (targets.length === 0) break;
      const names = await Promise.all(targets.map(({ input }) => podNameOf(ctx, input.sandboxId)));
      const recordedAtMs = performance.now();
      for (const name of names)
        ctx.cluster.node.recordSandboxFailure(NAMESPACE, name ?? '', REFUSAL);
      const latencies = await Promise.all(
        targets.map(({ handle }) =>
          handle.result().then(
            () => NaN,
            () => performance.now() - recordedAtMs,
          ),
        ),
      );
      const unfailed = latencies.filter((ms) => !Number.isFinite(ms)).length;
      if (unfailed > 0)
        problems.push(`${flavour}: ${unfailed} of ${batch} refused creates did not fail`);
      const row = rows.find((r) => r.waiting === Math.max(...sizes)) as Row;
      const key = `refusal_latency_${batch}_at_once_ms` as const;
      row[key] = summary(latencies);
      console.log(`${flavour}: ${key} ${JSON.stringify(row[key])}`);
    }
    for (const { handle } of waiting) await handle.cancel().catch(() => undefined);
  } finally {
    worker.kill('SIGTERM');
    await new Promise((resolveExit) => worker.once('exit', resolveExit));
  }
  return rows;
}

/** Forces a full GC (no --expose-gc needed) and returns the heap in use, in bytes. */
function heapUsedAfterGc(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

/**
 * The events cache's memory with `count` refused pods: `count` sandbox pods, each with one
 * kubelet refusal event (Unavailable, so no wait would end), listed by one informer pair in
 * this process; heap after GC with the caches filled minus before. In MiB.
 */
async function eventsCacheMib(count: number): Promise<{ events: number; heap_mib: number }> {
  const cluster = await SimulatedCluster.start({ startupDelayMs: 100 });
  cluster.faults.neverReady(true);
  const client = createKubernetesClient({
    kubeconfigYaml: cluster.kubeconfigYaml(),
    namespace: NAMESPACE,
  });
  for (let i = 0; i < count; i++) {
    const pod = await createPod(client, {
      sandboxId: `sbx_cache${i}`,
      generation: 1,
      template: 'base',
      image: 'example/base:1',
      resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
    });
    cluster.node.recordSandboxFailure(
      NAMESPACE,
      pod.name,
      REFUSAL.replace('InvalidArgument', 'Unavailable'),
    );
  }
  const podsOnly = new SandboxInformers({ client, retryDelayMs: 1_000, watchTimeoutSeconds: 25 });
  const before = heapUsedAfterGc();
  podsOnly.start();
  await until(
    () => podsOnly.eventsCacheSize === count && podsOnly.cachedPod('sbx-cache0-g1') !== undefined,
    60_000,
    'caches filled',
  );
  const after = heapUsedAfterGc();
  const events = podsOnly.eventsCacheSize;
  await podsOnly.stop();
  await cluster.close();
  return { events, heap_mib: Math.round(((after - before) / 1024 / 1024) * 10) / 10 };
}

/**
 * Runs the waits benchmark; the baseline is skipped with a message when BASELINE_DIR is unset
 * or holds no `worker/main.ts`.
 * @returns the window (ms), the rows and the informer caches' heap; failed checks go to
 *   `problems`
 */
export async function measureWaits(): Promise<Record<string, unknown>> {
  const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-bench-waits-'));
  const devServer = await startDevServer({ ui: false });
  const cluster = await SimulatedCluster.start({ startupDelayMs: 100 });
  cluster.faults.neverReady(true);
  const store = await openStore({ sqliteFile: join(dataDir, 'store.db') });
  const connection = await Connection.connect({ address: devServer.address });
  const ctx: Context = {
    cluster,
    client: new Client({ connection }),
    store,
    dataDir,
    temporalAddress: devServer.address,
  };
  // Warm-up: one pod through the client, so the first measurement is not a cold start.
  await createPod(
    createKubernetesClient({ kubeconfigYaml: cluster.kubeconfigYaml(), namespace: NAMESPACE }),
    {
      sandboxId: 'sbx_warmup',
      generation: 1,
      template: 'base',
      image: 'example/base:1',
      resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
    },
  );
  const results: Row[] = [];
  let cache: { events: number; heap_mib: number } | undefined;
  try {
    const sizes = (process.env.BENCH_WAITS ?? '1,100,1000').split(',').map(Number);
    results.push(...(await measure(ctx, 'informers', resolve('.'), sizes)));
    const baselineDir = process.env.BASELINE_DIR ?? '';
    if (baselineDir && existsSync(join(baselineDir, 'worker/main.ts'))) {
      const baselineSizes = sizes.filter((size) => size <= 100);
      results.push(...(await measure(ctx, 'baseline', baselineDir, baselineSizes)));
    } else {
      console.log(
        `baseline skipped: BASELINE_DIR (${baselineDir || 'unset'}) names no checkout with worker/main.ts`,
      );
    }
    // Both caches (1,000 pods and their 1,000 refusal events), in this process.
    cache = await eventsCacheMib(1_000);
    console.log(
      `informer caches with 1,000 pods and 1,000 refusal events: ${JSON.stringify(cache)}`,
    );
  } finally {
    await connection.close();
    await store.close();
    await cluster.close();
    await devServer.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }
  console.log('\nwaits (side by side):');
  for (const row of results) console.log(`  ${JSON.stringify(row)}`);
  return { window_ms: WINDOW_MS, results, informer_caches_1000: cache };
}
