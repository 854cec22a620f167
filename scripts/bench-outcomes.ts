/**
 * `npm run bench`: how fast a create's outcome is visible, side by side with the Temporal floors
 * measured in the same run (README, "Benchmark"). It starts `scripts/start.ts` as a child process
 * with a fresh DATA_DIR and free ports, runs the floor workflows (scripts/bench-workflows.ts) on
 * a worker of its own against the stack's dev server, and measures over HTTP:
 *
 *   - floors: one failing activity, and the create's former shape with no-op activities, from
 *     the start call to the client seeing the workflow failed; 1 at a time (20 runs), 10 and
 *     100 at once;
 *   - the product, refusal (disk 300 on `base`): from POST to the operation showing `failed`
 *     (long-poll `GET /v1/operations/{id}?wait=30s`), 1 at a time, 10 and 100 at once, and
 *     open-loop at 20 creates/s for 30 s; the synchronous route's 400, 1 at a time;
 *   - success throughput: 50 successful creates (disk 2048) at once, creates per second;
 *   - `GET /v1/operations/{id}` latency at 1,000 requests/s for 5 s (open loop);
 *   - peak RSS of the stack process (worker + API + simulated cluster; VmHWM), in MiB.
 *
 * It checks that every create ended as expected and that no refused create left a pod, prints a
 * table (p50/p95/max in ms, each against the goal) and writes
 * bench-results/bench-<time>.json. Exit code 1 if a check failed (a missed goal is reported,
 * not a failure).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CoreV1Api, KubeConfig, Watch } from '@kubernetes/client-node';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { Agent, fetch as undiciFetch } from 'undici';
import { freePort } from '../config/free-port.js';
import type { FloorActivities } from './bench-workflows.js';

const TOKEN = 'dev-token';
const problems: string[] = [];

interface Operation {
  id: string;
  status: string;
  done: boolean;
  sandbox_id: string;
  error: { code: string; message: string } | null;
}

function body(diskMib: number): string {
  return JSON.stringify({
    template: 'base',
    resources: { cpu: 1, memory_mib: 256, disk_mib: diskMib },
  });
}

async function api(base: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${base}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      ...init.headers,
    },
  });
}

/**
 * When the bench's own events watch saw each pod's refusal (pod name -> performance.now()), so
 * the product's figures run from the refusal, as the floors run from their failing activity.
 */
const refusalSeenAt = new Map<string, number>();

/** The pod name of a sandbox's first generation (docs/architecture.md, "The pod"). */
function podNameOf(sandboxId: string): string {
  return `${sandboxId.replace(/_/g, '-')}-g1`;
}

/** Watches the namespace's events and records when each pod's refusal arrived. */
async function watchRefusals(kubeConfig: KubeConfig): Promise<() => void> {
  const watch = new Watch(kubeConfig);
  const request = await watch.watch(
    '/api/v1/namespaces/sandboxes/events',
    { resourceVersion: '0' },
    (_type: string, event: { reason?: string; involvedObject?: { name?: string } }) => {
      const name = event.involvedObject?.name;
      if (event.reason === 'FailedCreatePodSandBox' && name && !refusalSeenAt.has(name)) {
        refusalSeenAt.set(name, performance.now());
      }
    },
    () => undefined,
  );
  return () => request.abort();
}

/** ms from the refusal event (as the bench saw it) to `at`; NaN when it never saw it. */
function sinceRefusal(sandboxId: string, at: number): number {
  const seen = refusalSeenAt.get(podNameOf(sandboxId));
  return seen === undefined ? NaN : at - seen;
}

/** How long one long-poll of the bench waits, in s. */
const WAIT_S = 30;

/** Waits (long-polling) until `done(op)` holds; returns the operation. */
async function awaitOperationState(
  base: string,
  op: Operation,
  done: (op: Operation) => boolean,
): Promise<Operation> {
  const deadlineAtMs = Date.now() + 300_000;
  while (!done(op)) {
    if (Date.now() > deadlineAtMs) throw new Error(`operation ${op.id} not settled after 300 s`);
    const askedAt = performance.now();
    const next = (await (
      await api(base, `/v1/operations/${op.id}?wait=${WAIT_S}s`)
    ).json()) as Operation;
    // An API that ignores `wait` answers at once: pause a little rather than spin.
    if (next.status === op.status && next.done === op.done && performance.now() - askedAt < 5) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    op = next;
  }
  return op;
}

/**
 * POST an asynchronous create; returns ms from the POST until `visible(op)` holds, the ms from
 * the refusal event, and the operation.
 */
async function asyncCreate(
  base: string,
  diskMib: number,
  visible: (op: Operation) => boolean,
): Promise<{ ms: number; fromRefusalMs: number; op: Operation }> {
  const started = performance.now();
  const response = await api(base, '/v1/sandboxes', { method: 'POST', body: body(diskMib) });
  if (response.status !== 202)
    throw new Error(`POST answered ${response.status}: ${await response.text()}`);
  const op = await awaitOperationState(base, (await response.json()) as Operation, visible);
  const at = performance.now();
  return { ms: at - started, fromRefusalMs: sinceRefusal(op.sandbox_id, at), op };
}

const failedVisible = (op: Operation) => op.status !== 'running';
const isDone = (op: Operation) => op.done;

/** POST a synchronous create; returns ms and the HTTP status and body. */
async function syncCreate(
  base: string,
  diskMib: number,
): Promise<{ ms: number; fromRefusalMs: number; status: number; text: string }> {
  const started = performance.now();
  const response = await api(base, '/sync/v1/sandboxes', { method: 'POST', body: body(diskMib) });
  const text = await response.text();
  const at = performance.now();
  let podName: string | undefined;
  try {
    podName = (JSON.parse(text) as { error?: { details?: { pod_name?: string } } }).error?.details
      ?.pod_name;
  } catch {
    podName = undefined;
  }
  const seen = podName === undefined ? undefined : refusalSeenAt.get(podName);
  const fromRefusalMs = seen === undefined ? NaN : at - seen;
  return { ms: at - started, fromRefusalMs, status: response.status, text };
}

interface Summary {
  n: number;
  p50: number;
  p95: number;
  max: number;
}

/** p50/p95/max of the finite values (a run that never settled is NaN and left out of n). */
function summary(values: number[]): Summary {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  const at = (q: number) =>
    sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN;
  const round = (v: number) => Math.round(v * 10) / 10;
  return {
    n: sorted.length,
    p50: round(at(0.5)),
    p95: round(at(0.95)),
    max: round(sorted.at(-1) ?? NaN),
  };
}

/** Runs `fn` `count` times at once; returns each run's ms. */
async function atOnce(count: number, fn: () => Promise<number>): Promise<number[]> {
  return Promise.all(Array.from({ length: count }, fn));
}

/** Runs `fn` `count` times one after another; returns each run's ms. */
async function oneAtATime(count: number, fn: () => Promise<number>): Promise<number[]> {
  const runs: number[] = [];
  for (let i = 0; i < count; i++) runs.push(await fn());
  return runs;
}

/** Starts `fn` at `perSecond` for `seconds` (open loop: a slow answer never delays the next). */
async function openLoop(
  perSecond: number,
  seconds: number,
  fn: () => Promise<number>,
): Promise<{ runs: number[]; wallMs: number }> {
  const started = performance.now();
  const total = perSecond * seconds;
  const pending: Array<Promise<number>> = [];
  for (let i = 0; i < total; i++) {
    const dueAt = started + (i * 1000) / perSecond;
    const wait = dueAt - performance.now();
    if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
    pending.push(fn());
  }
  const runs = await Promise.all(pending);
  return { runs, wallMs: performance.now() - started };
}

function expectRefused(op: Operation): void {
  if (
    op.status !== 'failed' ||
    op.error?.code !== 'invalid_request' ||
    !op.error.message.includes('451 MiB')
  ) {
    problems.push(
      `operation ${op.id} ended ${op.status} ${JSON.stringify(op.error)}, expected invalid_request naming 451 MiB`,
    );
  }
}

function expectSyncRefused(result: { status: number; text: string }): void {
  if (result.status !== 400 || !result.text.includes('451 MiB')) {
    problems.push(
      `sync create answered ${result.status} ${result.text.slice(0, 200)}, expected 400 naming 451 MiB`,
    );
  }
}

/** The floor worker and client on the stack's dev server. */
async function startFloors(temporalAddress: string) {
  const taskQueue = `bench-floor-${process.pid}`;
  // The floors fail on purpose: keep the SDK's warnings about it out of the table's way.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const nativeConnection = await NativeConnection.connect({ address: temporalAddress });
  const activities: FloorActivities = {
    async step() {},
    async refuse() {
      throw ApplicationFailure.nonRetryable('refused', 'InvalidRequest');
    },
  };
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue,
    workflowsPath: fileURLToPath(new URL('./bench-workflows.ts', import.meta.url)),
    activities,
  });
  const running = worker.run();
  const connection = await Connection.connect({ address: temporalAddress });
  const client = new Client({ connection, namespace: 'default' });
  let seq = 0;
  const run = async (workflowType: string): Promise<number> => {
    const started = performance.now();
    const handle = await client.workflow.start(workflowType, {
      taskQueue,
      workflowId: `bench-floor-${process.pid}-${seq++}`,
    });
    await handle.result().catch(() => undefined);
    return performance.now() - started;
  };
  return {
    run,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/** One line as each stage ends, so a long run shows where it is. */
function progress(stage: string, stats: Summary): void {
  console.log(`  ${stage.padEnd(24)} p50 ${stats.p50} ms, p95 ${stats.p95} ms (n ${stats.n})`);
}

/** One row of the printed table. */
interface Row {
  run: string;
  stats: Summary;
  goal?: string;
  met?: boolean;
}

function printTable(rows: Row[]): void {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  console.log(line(['run', 'n', 'p50 ms', 'p95 ms', 'max ms', 'goal', 'met']));
  console.log(line(['---', '---:', '---:', '---:', '---:', '---', '---']));
  for (const row of rows) {
    console.log(
      line([
        row.run,
        String(row.stats.n),
        row.stats.p50.toLocaleString('en-US'),
        row.stats.p95.toLocaleString('en-US'),
        row.stats.max.toLocaleString('en-US'),
        row.goal ?? '',
        row.met === undefined ? '' : row.met ? 'yes' : 'no',
      ]),
    );
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-bench-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const stack = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      // The node refuses 150 ms after the pod is created, as in the measurements.
      SIMULATED_NODE_DELAY_MS: '150',
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  stack.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  let floors: Awaited<ReturnType<typeof startFloors>> | undefined;
  let stopWatch: (() => void) | undefined;
  const stopStack = async () => {
    stopWatch?.();
    await floors?.stop().catch(() => undefined);
    if (stack.exitCode === null) {
      stack.kill('SIGINT');
      await new Promise((resolve) => stack.once('exit', resolve));
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  try {
    const readyByAtMs = Date.now() + 300_000;
    while (!output.includes('durable-sandbox is running')) {
      if (stack.exitCode !== null)
        throw new Error(`the stack exited (${stack.exitCode}):\n${output}`);
      if (Date.now() > readyByAtMs)
        throw new Error(`the stack did not start within 300 s:\n${output}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    const temporalAddress = /Temporal:\s+([^,\s]+)/.exec(output)?.[1];
    if (!temporalAddress) throw new Error(`no Temporal address in the stack's output:\n${output}`);
    floors = await startFloors(temporalAddress);
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(join(dataDir, 'kubeconfig'));
    stopWatch = await watchRefusals(kubeConfig);
    console.log(`stack up at ${base} (pid ${stack.pid}), Temporal ${temporalAddress}; warming up`);
    expectRefused((await asyncCreate(base, 300, isDone)).op);
    await floors.run('floorOneFailingActivity');
    await floors.run('floorCreateShape');

    const refusal = async (): Promise<number> => {
      try {
        const { fromRefusalMs, op } = await asyncCreate(base, 300, failedVisible);
        expectRefused(op);
        return fromRefusalMs;
      } catch (err) {
        problems.push(`refused create: ${(err as Error).message}`);
        return NaN;
      }
    };
    const syncRefusal = async (): Promise<number> => {
      const result = await syncCreate(base, 300);
      expectSyncRefused(result);
      return result.fromRefusalMs;
    };
    const oneActivity = () => floors!.run('floorOneFailingActivity');
    const createShape = () => floors!.run('floorCreateShape');

    const stats: Record<string, Summary> = {};
    stats.floor1 = summary(await oneAtATime(20, oneActivity));
    progress('floor 1', stats.floor1);
    stats.shape1 = summary(await oneAtATime(20, createShape));
    progress('shape 1', stats.shape1);
    stats.product1 = summary(await oneAtATime(20, refusal));
    progress('product 1', stats.product1);
    stats.sync1 = summary(await oneAtATime(20, syncRefusal));
    progress('sync 1', stats.sync1);
    stats.floor10 = summary(await atOnce(10, oneActivity));
    progress('floor 10', stats.floor10);
    stats.shape10 = summary(await atOnce(10, createShape));
    progress('shape 10', stats.shape10);
    stats.product10 = summary(await atOnce(10, refusal));
    progress('product 10', stats.product10);
    stats.floor100 = summary(await atOnce(100, oneActivity));
    progress('floor 100', stats.floor100);
    stats.shape100 = summary(await atOnce(100, createShape));
    progress('shape 100', stats.shape100);
    stats.product100 = summary(await atOnce(100, refusal));
    progress('product 100', stats.product100);
    const open = await openLoop(20, 30, refusal);
    stats.open20 = summary(open.runs);
    progress('open loop 20/s', stats.open20);

    const successStarted = performance.now();
    const successes = await Promise.all(
      Array.from({ length: 50 }, () => asyncCreate(base, 2048, isDone)),
    );
    const successWallMs = performance.now() - successStarted;
    for (const { op } of successes) {
      if (op.status !== 'succeeded')
        problems.push(`operation ${op.id} ended ${op.status}, expected succeeded`);
    }
    stats.success50 = summary(successes.map((r) => r.ms));
    const throughputPerS = Math.round((50 / (successWallMs / 1000)) * 10) / 10;

    const readId = successes[0]?.op.id;
    // Keep-alive connections, as a client at 1,000 requests/s would hold; a request waiting
    // for a free connection counts that wait in its latency.
    const readAgent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
    const reads = await openLoop(1000, 5, async () => {
      const started = performance.now();
      try {
        const response = await undiciFetch(`${base}/v1/operations/${readId}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
          dispatcher: readAgent,
        });
        await response.arrayBuffer();
        if (response.status !== 200) problems.push(`GET operation answered ${response.status}`);
      } catch (err) {
        problems.push(`GET operation failed: ${(err as Error).message}`);
      }
      return performance.now() - started;
    });
    await readAgent.close();
    progress('GET operation at 1,000/s', summary(reads.runs));
    stats.get1000 = summary(reads.runs);
    const readRate = Math.round(reads.runs.length / (reads.wallMs / 1000));

    // Compensation finishes after the outcome is visible: wait until no refused pod is left.
    const core = kubeConfig.makeApiClient(CoreV1Api);
    let podsLeft = -1;
    for (let i = 0; i < 120; i++) {
      podsLeft = (await core.listNamespacedPod({ namespace: 'sandboxes' })).items.length;
      if (podsLeft === 50) break;
      await new Promise((resolve) => setTimeout(resolve, 500));
    }
    if (podsLeft !== 50) problems.push(`${podsLeft} pods left, expected the 50 running ones`);

    const status = readFileSync(`/proc/${stack.pid}/status`, 'utf8');
    const peakRssMib = Math.round(Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024);

    const s = stats as Record<string, Summary>;
    const within = (value: number, limit: number) => value <= limit;
    const rows: Row[] = [
      { run: 'floor: one failing activity, 1 at a time', stats: s.floor1! },
      { run: 'floor: create shape, no-op activities, 1 at a time', stats: s.shape1! },
      {
        run: 'product: refusal event -> GET shows failed, 1 at a time',
        stats: s.product1!,
        goal: `p50 <= 1.5x one-activity floor (${Math.round(1.5 * s.floor1!.p50)})`,
        met: within(s.product1!.p50, 1.5 * s.floor1!.p50),
      },
      {
        run: 'product: refusal event -> sync 400, 1 at a time',
        stats: s.sync1!,
        goal: `p50 <= 1.5x one-activity floor (${Math.round(1.5 * s.floor1!.p50)})`,
        met: within(s.sync1!.p50, 1.5 * s.floor1!.p50),
      },
      { run: 'floor: one failing activity, 10 at once', stats: s.floor10! },
      { run: 'floor: create shape, 10 at once', stats: s.shape10! },
      { run: 'product: refusal, 10 at once', stats: s.product10! },
      { run: 'floor: one failing activity, 100 at once', stats: s.floor100! },
      { run: 'floor: create shape, 100 at once', stats: s.shape100! },
      {
        run: 'product: refusal, 100 at once',
        stats: s.product100!,
        goal: `p50 <= 2x create-shape floor (${Math.round(2 * s.shape100!.p50)}), p95 < 2000`,
        met: within(s.product100!.p50, 2 * s.shape100!.p50) && s.product100!.p95 < 2000,
      },
      { run: 'product: refusal, open loop 20/s for 30 s', stats: s.open20! },
      { run: `product: 50 successful creates at once (${throughputPerS}/s)`, stats: s.success50! },
      {
        run: `GET operation at ${readRate} requests/s (open loop, 5 s)`,
        stats: s.get1000!,
        goal: 'p50 <= 5',
        met: within(s.get1000!.p50, 5),
      },
    ];
    console.log('');
    printTable(rows);
    console.log(
      `\nsuccess throughput: ${throughputPerS} creates/s; stack peak RSS ${peakRssMib} MiB`,
    );
    mkdirSync('bench-results', { recursive: true });
    const file = join(
      'bench-results',
      `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    );
    writeFileSync(
      file,
      `${JSON.stringify(
        {
          at: new Date().toISOString(),
          rows,
          successThroughputPerS: throughputPerS,
          getRatePerS: readRate,
          peakRssMib,
          problems,
        },
        null,
        2,
      )}\n`,
    );
    console.log(`written to ${file}`);
  } finally {
    await stopStack();
  }
  if (problems.length > 0) {
    console.error(`\n${problems.length} check(s) failed:\n- ${problems.slice(0, 20).join('\n- ')}`);
    process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
