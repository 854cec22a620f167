/**
 * `npm run bench`: latency and throughput of creates on the embedded stack (README,
 * "Benchmark"). It starts `scripts/start.ts` as a child process with a fresh DATA_DIR
 * and free ports, then measures over HTTP:
 *
 *   (a) refusal latency (disk 300 on `base`): POST to the operation being `failed`
 *       (asynchronous, polling the operation every 50 ms) and POST to 400 (synchronous),
 *       for 20 sequential creates and for 50 concurrent ones;
 *   (b) successful create (disk 2048): latency and throughput of 50 concurrent creates;
 *   (c) peak RSS of the stack process (worker + API + simulated cluster; VmHWM), in MiB;
 *   (d) the CLI: wall time of `create --disk-mib 300 --wait` (a refusal, exit 1), 5 runs each
 *       through the package bin (`bin/durable-sandbox.js`) and, as the baseline measured in the
 *       same run, through `npm run cli --`.
 *
 * It checks that every create ended as expected and that no refused create left a pod, prints
 * p50/p95/max in ms and writes bench-results/bench-<time>.json. Exit code 1 if a check failed.
 *
 * `npm run bench -- --real` measures the refusal latency instead on the simulated cluster and on
 * the real apiserver tier side by side (see compareRefusalLatency) and writes
 * bench-results/bench-real-<time>.json.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, Watch, type CoreV1Event } from '@kubernetes/client-node';
import { podNameFor } from '../kubernetes/pod-spec.js';
import { freePort } from '../config/free-port.js';

const TOKEN = 'dev-token';
const POLL_MS = 50;
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

/** POST an asynchronous create and poll until done; returns ms and the final operation. */
async function asyncCreate(base: string, diskMib: number): Promise<{ ms: number; op: Operation }> {
  const started = performance.now();
  const response = await api(base, '/v1/sandboxes', { method: 'POST', body: body(diskMib) });
  if (response.status !== 202)
    throw new Error(`POST answered ${response.status}: ${await response.text()}`);
  let op = (await response.json()) as Operation;
  const deadlineAtMs = Date.now() + 120_000;
  while (!op.done) {
    if (Date.now() > deadlineAtMs) throw new Error(`operation ${op.id} still running after 120 s`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    op = (await (await api(base, `/v1/operations/${op.id}`)).json()) as Operation;
  }
  return { ms: performance.now() - started, op };
}

/** POST a synchronous create; returns ms and the HTTP status and body. */
async function syncCreate(
  base: string,
  diskMib: number,
): Promise<{ ms: number; status: number; text: string }> {
  const started = performance.now();
  const response = await api(base, '/sync/v1/sandboxes', { method: 'POST', body: body(diskMib) });
  const text = await response.text();
  return { ms: performance.now() - started, status: response.status, text };
}

function summary(values: number[]): { n: number; p50: number; p95: number; max: number } {
  const sorted = [...values].sort((a, b) => a - b);
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

/** Runs a command to its end; returns ms and its exit code. */
async function timed(command: string, args: string[], env: NodeJS.ProcessEnv) {
  const started = performance.now();
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: 'ignore' });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { ms: performance.now() - started, code };
}

/** (d): `create --disk-mib 300 --wait` through the bin and through `npm run cli`, alternating. */
async function cliCreateWait(base: string): Promise<Record<string, unknown>> {
  const env = { DURABLE_SANDBOX_URL: base, DURABLE_SANDBOX_TOKEN: TOKEN };
  const args = ['create', '--disk-mib', '300', '--wait'];
  const bin: number[] = [];
  const npmRun: number[] = [];
  for (let i = 0; i < 5; i++) {
    for (const [runs, command, commandArgs] of [
      [bin, process.execPath, ['bin/durable-sandbox.js', ...args]],
      [npmRun, 'npm', ['run', '--silent', 'cli', '--', ...args]],
    ] as const) {
      const { ms, code } = await timed(command, [...commandArgs], env);
      if (code !== 1)
        problems.push(`${command} ${commandArgs.join(' ')} exited ${code}, expected 1`);
      runs.push(ms);
    }
  }
  return { bin: summary(bin), npm_run_cli_baseline: summary(npmRun) };
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

/** A stack started by the bench: `scripts/start.ts` as a child process with a fresh DATA_DIR. */
interface BenchStack {
  base: string;
  dataDir: string;
  pid: number;
  stop(): Promise<void>;
}

/**
 * Starts the embedded stack with `env` added and waits for its banner (300 s, enough for a
 * cold build of the apiserver tier's binaries when `CLUSTER=real`).
 */
async function startStack(env: Record<string, string> = {}): Promise<BenchStack> {
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
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  stack.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const stop = async () => {
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
  } catch (err) {
    await stop();
    throw err;
  }
  return { base, dataDir, pid: stack.pid ?? -1, stop };
}

async function main(): Promise<void> {
  if (process.argv.includes('--real')) {
    await compareRefusalLatency();
    return;
  }
  const { base, dataDir, pid, stop: stopStack } = await startStack();
  const stack = { pid };
  try {
    console.log(`stack up at ${base} (pid ${stack.pid}); warming up`);
    expectRefused((await asyncCreate(base, 300)).op);

    const results: Record<string, unknown> = {};
    const sequentialAsync: number[] = [];
    const sequentialSync: number[] = [];
    for (let i = 0; i < 20; i++) {
      const { ms, op } = await asyncCreate(base, 300);
      expectRefused(op);
      sequentialAsync.push(ms);
      const sync = await syncCreate(base, 300);
      expectSyncRefused(sync);
      sequentialSync.push(sync.ms);
    }
    results.refusal_sequential_async_ms = summary(sequentialAsync);
    results.refusal_sequential_sync_ms = summary(sequentialSync);
    results.cli_create_wait_refused_ms = await cliCreateWait(base);

    const concurrentAsync = await Promise.all(
      Array.from({ length: 50 }, () => asyncCreate(base, 300)),
    );
    concurrentAsync.forEach(({ op }) => expectRefused(op));
    results.refusal_concurrent50_async_ms = summary(concurrentAsync.map((r) => r.ms));
    const concurrentSync = await Promise.all(
      Array.from({ length: 50 }, () => syncCreate(base, 300)),
    );
    concurrentSync.forEach(expectSyncRefused);
    results.refusal_concurrent50_sync_ms = summary(concurrentSync.map((r) => r.ms));

    const successStarted = performance.now();
    const successes = await Promise.all(Array.from({ length: 50 }, () => asyncCreate(base, 2048)));
    const successWallMs = performance.now() - successStarted;
    for (const { op } of successes) {
      if (op.status !== 'succeeded')
        problems.push(`operation ${op.id} ended ${op.status}, expected succeeded`);
    }
    results.success_concurrent50_async_ms = summary(successes.map((r) => r.ms));
    results.success_concurrent50_throughput_per_s =
      Math.round((50 / (successWallMs / 1000)) * 10) / 10;

    // No refused create may leave a pod: only the 50 running sandboxes keep theirs.
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromFile(join(dataDir, 'kubeconfig'));
    const pods = await kubeConfig
      .makeApiClient(CoreV1Api)
      .listNamespacedPod({ namespace: 'sandboxes' });
    results.pods_left = pods.items.length;
    if (pods.items.length !== 50)
      problems.push(`${pods.items.length} pods left, expected the 50 running ones`);

    const status = readFileSync(`/proc/${stack.pid}/status`, 'utf8');
    const peakKiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1] ?? NaN);
    results.stack_peak_rss_mib = Math.round(peakKiB / 1024);

    console.log('\nresults (ms unless noted):');
    for (const [name, value] of Object.entries(results))
      console.log(`  ${name.padEnd(38)} ${JSON.stringify(value)}`);
    mkdirSync('bench-results', { recursive: true });
    const file = join(
      'bench-results',
      `bench-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
    );
    writeFileSync(
      file,
      `${JSON.stringify({ at: new Date().toISOString(), results, problems }, null, 2)}\n`,
    );
    console.log(`\nwritten to ${file}`);
  } finally {
    await stopStack();
  }
  if (problems.length > 0) {
    console.error(`\n${problems.length} check(s) failed:\n- ${problems.slice(0, 20).join('\n- ')}`);
    process.exitCode = 1;
  }
}

/** Refusal latency on one cluster: what `--real` prints for each. */
interface RefusalFigures {
  startup_to_banner_ms: number;
  refusal_event_to_failed_ms: ReturnType<typeof summary>;
  refusal_post_to_failed_async_ms: ReturnType<typeof summary>;
  refusal_post_to_400_sync_ms: ReturnType<typeof summary>;
}

const REFUSALS = 20;

/**
 * `npm run bench -- --real`: the refusal latency on the simulated cluster and on the real
 * apiserver tier (CLUSTER=real: etcd, kube-apiserver, node agent), one stack after the other in
 * one run, printed side by side. For each: 20 sequential asynchronous creates with disk 300,
 * measuring the time from the bench seeing the refusal event (its own events watch in the
 * sandbox namespace, as an admin) to seeing the operation `failed` (polling every 50 ms), and
 * POST to `failed`; then 20 sequential synchronous creates, POST to 400.
 */
async function compareRefusalLatency(): Promise<void> {
  const figures: Record<string, RefusalFigures> = {};
  for (const cluster of ['simulated', 'real'] as const) {
    const startedAtMs = Date.now();
    const stack = await startStack({ CLUSTER: cluster });
    const startupMs = Date.now() - startedAtMs;
    try {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(
        join(stack.dataDir, cluster === 'real' ? 'kubeconfig-admin' : 'kubeconfig'),
      );
      const refusalSeenAtMs = new Map<string, number>();
      const watch = await new Watch(kubeConfig).watch(
        '/api/v1/namespaces/sandboxes/events',
        { fieldSelector: 'reason=FailedCreatePodSandBox' },
        (type, event: CoreV1Event) => {
          const pod = event.involvedObject?.name;
          if (type === 'ADDED' && pod && !refusalSeenAtMs.has(pod))
            refusalSeenAtMs.set(pod, performance.now());
        },
        () => {},
      );
      console.log(`${cluster}: stack up in ${startupMs} ms; warming up`);
      expectRefused((await asyncCreate(stack.base, 300)).op);
      const eventToFailed: number[] = [];
      const postToFailed: number[] = [];
      for (let i = 0; i < REFUSALS; i++) {
        const { ms, op } = await asyncCreate(stack.base, 300);
        const failedAtMs = performance.now();
        expectRefused(op);
        postToFailed.push(ms);
        const seenAtMs = refusalSeenAtMs.get(podNameFor(op.sandbox_id, 1));
        if (seenAtMs === undefined) problems.push(`${cluster}: no refusal event seen for ${op.id}`);
        else eventToFailed.push(failedAtMs - seenAtMs);
      }
      const sync: number[] = [];
      for (let i = 0; i < REFUSALS; i++) {
        const result = await syncCreate(stack.base, 300);
        expectSyncRefused(result);
        sync.push(result.ms);
      }
      watch.abort();
      figures[cluster] = {
        startup_to_banner_ms: startupMs,
        refusal_event_to_failed_ms: summary(eventToFailed),
        refusal_post_to_failed_async_ms: summary(postToFailed),
        refusal_post_to_400_sync_ms: summary(sync),
      };
    } finally {
      await stack.stop();
    }
  }
  console.log(`\nrefusal latency, ${REFUSALS} sequential creates each (ms):`);
  console.log(`  ${''.padEnd(34)} ${'simulated'.padEnd(40)} real apiserver tier`);
  for (const name of Object.keys(figures.simulated ?? {}) as Array<keyof RefusalFigures>) {
    const cell = (cluster: string) => JSON.stringify(figures[cluster]?.[name] ?? null);
    console.log(`  ${name.padEnd(34)} ${cell('simulated').padEnd(40)} ${cell('real')}`);
  }
  mkdirSync('bench-results', { recursive: true });
  const file = join(
    'bench-results',
    `bench-real-${new Date().toISOString().replace(/[:.]/g, '-')}.json`,
  );
  writeFileSync(
    file,
    `${JSON.stringify({ at: new Date().toISOString(), figures, problems }, null, 2)}\n`,
  );
  console.log(`\nwritten to ${file}`);
  if (problems.length > 0) {
    console.error(`\n${problems.length} check(s) failed:\n- ${problems.slice(0, 20).join('\n- ')}`);
    process.exitCode = 1;
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
