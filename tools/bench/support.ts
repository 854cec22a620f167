/**
 * What every `npm run bench` mode shares (docs/benchmarks.md): the embedded stack as a child
 * process, the API calls a mode makes, the refusal events watch, p50/p95/max summaries, the
 * results file in bench-results/, and the list of failed checks that sets the exit code.
 */
import type { TemporalCredentials } from '../../src/config/temporal-connection.js';
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, Watch, type CoreV1Event } from '@kubernetes/client-node';
import { freePort } from '../../src/process/free-port.js';
import { DEV_TOKEN } from '../../src/config/index.js';
import { ROOMY_TENANT_LIMITS, ROOMY_TENANT_LIMITS_ENV } from '../roomy-tenant-limits.js';

/** The embedded stack's development token. */
export const TOKEN = DEV_TOKEN;

/** Every tenant's limits in a bench run: roomy (tools/roomy-tenant-limits.ts). */
export const BENCH_TENANT_LIMITS = ROOMY_TENANT_LIMITS;

/**
 * What every bench rig adds to the environment of the API and worker processes it starts
 * (tools/bench/waits.ts, replace.ts, topology.ts): JSON logs, ALLOW_DEV_TOKEN so an API
 * started with `npm run api` accepts {@link TOKEN} (src/config/api-credentials.ts refuses to start
 * without credentials otherwise, docs/security.md), and {@link BENCH_TENANT_LIMITS}.
 */
export const BENCH_SERVICE_ENV: Readonly<Record<string, string>> = {
  ALLOW_DEV_TOKEN: 'true',
  LOG_FORMAT: 'json',
  TENANT_LIMITS: ROOMY_TENANT_LIMITS_ENV,
};

/** The checks that failed in this run; any entry makes the process exit 1 (see `finish`). */
export const problems: string[] = [];

/**
 * An error as a problem line: its message and, for a failed fetch, the cause undici gives
 * (`fetch failed (UND_ERR_SOCKET: other side closed)`).
 */
export function errorText(err: unknown): string {
  const error = err as Error & { cause?: Error & { code?: string } };
  const cause = error?.cause;
  if (!(cause instanceof Error)) return String(error?.message ?? err);
  return `${error.message} (${cause.code ? `${cause.code}: ` : ''}${cause.message})`;
}

/** An operation as `GET /v1/operations/{id}` answers it (the fields the bench reads). */
export interface Operation {
  id: string;
  status: string;
  done: boolean;
  sandbox_id: string;
  error: { code: string; message: string } | null;
}

/** p50/p95/max in ms over `n` runs. */
export interface Summary {
  n: number;
  p50: number;
  p95: number;
  max: number;
}

/**
 * p50/p95/max of the finite values, rounded to 0.1 (a run that never settled is NaN and left
 * out of n); NaN fields when no value is finite.
 */
export function summary(values: number[]): Summary {
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

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Runs `fn` `count` times one after another; returns each run's result (ms, or a timing). */
export async function oneAtATime<T = number>(count: number, fn: () => Promise<T>): Promise<T[]> {
  const runs: T[] = [];
  for (let i = 0; i < count; i++) runs.push(await fn());
  return runs;
}

/** Runs `fn` `count` times at once; returns each run's result (ms, or a timing). */
export async function atOnce<T = number>(count: number, fn: () => Promise<T>): Promise<T[]> {
  return Promise.all(Array.from({ length: count }, fn));
}

/** A process's memory from /proc/<pid>/status in MiB: `VmHWM` (peak) or `VmRSS` (now). */
export function memoryMib(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(new RegExp(`${field}:\\s+(\\d+)`).exec(status)?.[1] ?? NaN) / 1024);
}

let clockTicksPerS: number | undefined;

/**
 * The CPU time (user + system) process `pid` has used so far, in ms: fields 14 and 15 of
 * /proc/<pid>/stat (proc(5)), in clock ticks (`getconf CLK_TCK`, 100 on Linux); its threads
 * included, its children (the Temporal dev server) not. NaN when the process is gone.
 */
export function cpuMs(pid: number): number {
  clockTicksPerS ??= Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return NaN;
  }
  // After the command name in parentheses: field 3 (state) is index 0, utime 11, stime 12.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / clockTicksPerS;
}

/**
 * The CPU time (user + system) of process `pid` and every process under it, in ms ({@link cpuMs}
 * each; each process's parent from field 4 of /proc/<pid>/stat, proc(5)): e.g. the Temporal dev
 * server, a guard shell whose child is the `temporal` binary. With `command`, only the processes
 * of the tree whose /proc/<pid>/comm is `command` count (e.g. `temporal` under the embedded
 * stack, whose tree holds esbuild's service too). A process gone meanwhile counts 0.
 */
export function treeCpuMs(pid: number, command?: string): number {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited while listed
    }
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++)
    for (const [child, parent] of parents) if (parent === tree[i]) tree.push(child);
  const commandOf = (p: number) => {
    try {
      return readFileSync(`/proc/${p}/comm`, 'utf8').trim();
    } catch {
      return '';
    }
  };
  return tree
    .filter((p) => command === undefined || commandOf(p) === command)
    .map(cpuMs)
    .reduce((sum, ms) => sum + (Number.isNaN(ms) ? 0 : ms), 0);
}

/**
 * Templates with distinct images (all 451 MiB on the simulated node and the node agent), so
 * every refused create meets a floor still unknown and reaches the node (docs/configuration.md, "Templates").
 */
export class FreshTemplates {
  private next = 0;

  /** @param count how many the stack's catalog holds */
  constructor(readonly count: number) {}

  /** SANDBOX_TEMPLATES for the stack: `base`, `known`, and the fresh templates. */
  catalog(): string {
    const catalog: Record<string, { image: string }> = {
      base: { image: 'ghcr.io/durable-sandbox/base:1' },
      known: { image: 'ghcr.io/durable-sandbox/known:1' },
    };
    for (let i = 0; i < this.count; i++) {
      catalog[`fresh-${i}`] = { image: `ghcr.io/durable-sandbox/fresh-${i}:1` };
    }
    return JSON.stringify(catalog);
  }

  /**
   * A template nothing was created with yet.
   * @throws Error when all `count` are used
   */
  take(): string {
    if (this.next >= this.count) throw new Error('the bench ran out of fresh templates');
    return `fresh-${this.next++}`;
  }
}

/** A stack started by the bench: `tools/start.ts` as a child process with a fresh DATA_DIR. */
export interface BenchStack {
  /** `http://127.0.0.1:<port>` of the API. */
  base: string;
  dataDir: string;
  pid: number;
  /** The Temporal frontend (`host:port`) from the stack's banner. */
  temporalAddress: string;
  /** TLS and client certificate for it (the topology's mTLS); unset: plaintext. */
  temporalCredentials?: TemporalCredentials;
  /** The fresh templates of its catalog. */
  fresh: FreshTemplates;
  /** A client config for the cluster: the admin's on the real tier, else the stack's. */
  kubeConfig(): KubeConfig;
  /** Peak RSS of the stack process (worker + API + cluster; VmHWM), in MiB. */
  peakRssMib(): number;
  /** CPU time the stack process (worker + API + simulated cluster) used so far, in ms ({@link cpuMs}). */
  cpuMs(): number;
  /** SIGINT, wait for the exit, remove the DATA_DIR. */
  stop(): Promise<void>;
}

/**
 * Starts the embedded stack (`tools/start.ts` of `checkoutDir`, default this checkout) with
 * `env` added and a catalog of `freshTemplates` fresh templates (written to a file in its
 * DATA_DIR); `NODE_OPTIONS_BENCH` is passed to node (e.g. `--cpu-prof`). Waits for its banner
 * (600 s: enough for a cold build of the apiserver tier's binaries when `CLUSTER=real`, or a
 * start on a loaded machine).
 * @throws Error with the stack's output when it exits or misses the 600 s
 */
export async function startStack(
  options: { env?: Record<string, string>; freshTemplates?: number; checkoutDir?: string } = {},
): Promise<BenchStack> {
  const fresh = new FreshTemplates(options.freshTemplates ?? 400);
  const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-bench-'));
  // A file, not the variable itself: a large catalog exceeds one environment string's limit.
  const catalogFile = join(dataDir, 'templates.json');
  writeFileSync(catalogFile, fresh.catalog());
  const port = await freePort();
  const nodeArgs = (process.env.NODE_OPTIONS_BENCH ?? '').split(/\s+/).filter(Boolean);
  const stack = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', 'tools/start.ts'], {
    cwd: options.checkoutDir,
    env: {
      ...process.env,
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      LOG_FORMAT: 'json',
      SANDBOX_TEMPLATES: catalogFile,
      TENANT_LIMITS: BENCH_SERVICE_ENV.TENANT_LIMITS,
      ...options.env,
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
    const readyByAtMs = Date.now() + 600_000;
    while (!output.includes('durable-sandbox is running')) {
      if (stack.exitCode !== null)
        throw new Error(`the stack exited (${stack.exitCode}):\n${output}`);
      if (Date.now() > readyByAtMs)
        throw new Error(`the stack did not start within 600 s:\n${output}`);
      await sleep(200);
    }
  } catch (err) {
    await stop();
    throw err;
  }
  const temporalAddress = /Temporal:\s+([^,\s]+)/.exec(output)?.[1] ?? '';
  const real = options.env?.CLUSTER === 'real';
  return {
    base: `http://127.0.0.1:${port}`,
    dataDir,
    pid: stack.pid ?? -1,
    temporalAddress,
    fresh,
    kubeConfig() {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(join(dataDir, real ? 'kubeconfig-admin' : 'kubeconfig'));
      return kubeConfig;
    },
    peakRssMib: () => memoryMib(stack.pid ?? -1, 'VmHWM'),
    cpuMs: () => cpuMs(stack.pid ?? -1),
    stop,
  };
}

/** The pods in the `sandboxes` namespace of the stack's cluster now. */
export async function podCount(stack: BenchStack): Promise<number> {
  const core = stack.kubeConfig().makeApiClient(CoreV1Api);
  return (await core.listNamespacedPod({ namespace: 'sandboxes' })).items.length;
}

/** A request to the API with the development token and a JSON content type. */
export async function api(base: string, path: string, init: RequestInit = {}): Promise<Response> {
  return fetch(`${base}${path}`, {
    ...init,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      'content-type': 'application/json',
      ...init.headers,
    },
  });
}

/** A create's body: 1 CPU, 256 MiB of memory, `diskMib` of disk. */
function createBody(diskMib: number, template: string): string {
  return JSON.stringify({ template, resources: { cpu: 1, memory_mib: 256, disk_mib: diskMib } });
}

/**
 * 503 answers the bench sent again: the API refuses creates while its cached cluster check
 * (src/api/readiness.ts, 2 s per answer) failed, which a loaded machine makes happen. Printed with
 * the results; the latency of a create includes its retries.
 */
export const unavailableRetries = { count: 0 };

/**
 * POST /v1/sandboxes with `body`; a 503 from the readiness check before anything is stored
 * ("the service cannot create sandboxes") is sent again (for up to 60 s, 500 ms apart, counted
 * in {@link unavailableRetries}). Any other answer, including a 503 after the sandbox was
 * stored, is returned as it is.
 * @returns the last answer
 */
export async function postCreate(base: string, body: string): Promise<Response> {
  for (let attempt = 0; ; attempt++) {
    const response = await api(base, '/v1/sandboxes', { method: 'POST', body });
    if (response.status !== 503 || attempt >= 120) return response;
    const text = await response.clone().text();
    if (!text.includes('the service cannot create sandboxes')) return response;
    unavailableRetries.count++;
    await sleep(500);
  }
}

/** How the bench learns an operation's progress: long-poll (`?wait=30s`) or a GET every ms. */
export type OperationPolling = { longPoll: true } | { everyMs: number };

/**
 * Reads the operation until `settled(op)` holds.
 * @returns the operation as it was then
 * @throws Error after 300 s
 */
export async function awaitOperation(
  base: string,
  op: Operation,
  settled: (op: Operation) => boolean,
  polling: OperationPolling,
): Promise<Operation> {
  const deadlineAtMs = Date.now() + 300_000;
  while (!settled(op)) {
    if (Date.now() > deadlineAtMs) throw new Error(`operation ${op.id} not settled after 300 s`);
    if ('everyMs' in polling) await sleep(polling.everyMs);
    const askedAtMs = performance.now();
    const query = 'longPoll' in polling ? '?wait=30s' : '';
    const next = (await (await api(base, `/v1/operations/${op.id}${query}`)).json()) as Operation;
    // An API that ignores `wait` answers at once: pause a little rather than spin.
    if ('longPoll' in polling && next.status === op.status && performance.now() - askedAtMs < 5)
      await sleep(10);
    op = next;
  }
  return op;
}

/** The outcome is visible: the operation left `running`. */
export const outcomeVisible = (op: Operation) => op.status !== 'running';
/** The operation is done. */
export const isDone = (op: Operation) => op.done;

/**
 * POST an asynchronous create and read it until `settled(op)`.
 * @returns ms from the POST, the instant it settled (performance.now()) and the operation
 * @throws Error when the POST does not answer 202, or after 300 s
 */
export async function asyncCreate(
  base: string,
  create: { diskMib: number; template: string },
  settled: (op: Operation) => boolean,
  polling: OperationPolling,
): Promise<{ ms: number; atMs: number; op: Operation }> {
  const startedAtMs = performance.now();
  const response = await postCreate(base, createBody(create.diskMib, create.template));
  if (response.status !== 202)
    throw new Error(`POST answered ${response.status}: ${await response.text()}`);
  const op = await awaitOperation(base, (await response.json()) as Operation, settled, polling);
  const atMs = performance.now();
  return { ms: atMs - startedAtMs, atMs, op };
}

/**
 * One POST of a create on `route` (`/v1/sandboxes` or `/sync/v1/sandboxes`).
 * @returns ms from the POST, the instant of the answer (performance.now()), status and body
 */
export async function post(
  base: string,
  route: string,
  create: { diskMib: number; template: string },
): Promise<{ ms: number; atMs: number; status: number; text: string }> {
  const startedAtMs = performance.now();
  const response = await api(base, route, {
    method: 'POST',
    body: createBody(create.diskMib, create.template),
  });
  const text = await response.text();
  const atMs = performance.now();
  return { ms: atMs - startedAtMs, atMs, status: response.status, text };
}

/** Records a problem unless the operation failed as invalid_request naming 451 MiB. */
export function expectRefused(op: Operation): void {
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

/** Records a problem unless a synchronous create answered 400 naming 451 MiB. */
export function expectSyncRefused(result: { status: number; text: string }): void {
  if (result.status !== 400 || !result.text.includes('451 MiB')) {
    problems.push(
      `sync create answered ${result.status} ${result.text.slice(0, 200)}, expected 400 naming 451 MiB`,
    );
  }
}

/** When the bench's own events watch first saw each pod's refusal. */
export interface RefusalWatch {
  /** performance.now() when the refusal of pod `podName` arrived; undefined if never. */
  seenAtMs(podName: string): number | undefined;
  stop(): void;
}

/**
 * Watches the `sandboxes` namespace's events with reason FailedCreatePodSandBox (field
 * selector) and records the first one per pod.
 */
export async function watchRefusals(kubeConfig: KubeConfig): Promise<RefusalWatch> {
  const seen = new Map<string, number>();
  const request = await new Watch(kubeConfig).watch(
    '/api/v1/namespaces/sandboxes/events',
    { fieldSelector: 'reason=FailedCreatePodSandBox' },
    (_type: string, event: CoreV1Event) => {
      const pod = event.involvedObject?.name;
      if (event.reason === 'FailedCreatePodSandBox' && pod && !seen.has(pod))
        seen.set(pod, performance.now());
    },
    () => undefined,
  );
  return { seenAtMs: (podName) => seen.get(podName), stop: () => request.abort() };
}

/**
 * Writes `{at, mode, ...results, problems}` to bench-results/bench-<mode>-<time>.json
 * (bench-<time>.json for the default mode) and prints its path.
 * @returns the file's path
 */
export function writeResults(mode: string, results: Record<string, unknown>): string {
  mkdirSync('bench-results', { recursive: true });
  const at = new Date().toISOString();
  const prefix = mode === 'default' ? 'bench' : `bench-${mode}`;
  const file = join('bench-results', `${prefix}-${at.replace(/[:.]/g, '-')}.json`);
  const retries = unavailableRetries.count;
  if (retries > 0)
    console.log(`\n${retries} create POST(s) answered 503 unavailable and were sent again`);
  writeFileSync(
    file,
    `${JSON.stringify({ at, mode, ...results, unavailable_retries: retries, problems }, null, 2)}\n`,
  );
  console.log(`\nwritten to ${file}`);
  return file;
}

/** Prints the failed checks, if any, and sets the exit code to 1 for them. */
export function finish(): void {
  if (problems.length === 0) return;
  console.error(`\n${problems.length} check(s) failed:\n- ${problems.slice(0, 20).join('\n- ')}`);
  process.exitCode = 1;
}

/** The time of day (UTC, HH:MM:SS) for the bench's progress lines. */
export function stamp(): string {
  return new Date().toISOString().slice(11, 19);
}
