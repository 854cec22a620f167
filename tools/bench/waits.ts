/**
 * `npm run bench -- waits`: what waiting creates cost (docs/benchmarks.md, "waits"), for the
 * baseline (BASELINE_DIR) and the candidate (CANDIDATE_DIR, default this checkout) one after the
 * other in one run. Each checkout gets servers of its own, started here: a Temporal dev server
 * (in memory, with `--metrics-port`), the simulated cluster (its node never starts the pods, so
 * every create waits; its request log says what the apiserver saw) and a store (a PostgreSQL
 * database of its own with BENCH_POSTGRES_URL, else a SQLite file);
 * then its own `src/api/main.ts` and `src/worker/main.ts` as child processes (as `npm run api` +
 * `npm run worker` on one dev server). Every create is a `POST /v1/sandboxes`.
 *
 * For 1, `many`, `crowd` and `max` waiting creates it measures, at rest over `windowMs`: the
 * worker's Temporal requests from the SDK's own metrics (`temporal_request_total` on the
 * worker's `/metrics`, long polls excluded) and the dev server's (`service_requests`), the
 * activity slots in use (`temporal_worker_task_slots_used`), the worker's RSS and the
 * apiserver's requests. Then: one refusal (`repeats` times, event recorded -> long-poll GET
 * shows failed), `atOnce` refusals at once (at `many`), a create's POST -> its pod's POST at
 * the apiserver (none waiting, and at `crowd`), and a worker SIGKILL at `many` (refusals while
 * no worker runs and after the restart, pods made ready, cancels: each must end as it should,
 * the rest must still wait). The baseline runs sizes up to `baselineMax` only (its waits hold an
 * activity slot each, 2,000 per worker). Every refused create must fail (else a problem).
 */
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import pg from 'pg';
import { freePort } from '../../src/process/free-port.js';
import { podNameFor } from '../../src/kubernetes/pod-spec.js';
import { SimulatedCluster } from '../../environments/simulated-cluster/index.js';
import { startDevServer, type DevServer } from '../../environments/dev-server/dev-server.js';
import { checkoutsOfRun, runInCheckout, stopChild, type Checkout } from './checkouts.js';
import type { GoalFigures, GoalRowId, GoalSizes } from './goals.js';
import { scrape, sumBy, sumOf } from './prometheus.js';
import {
  api,
  BENCH_SERVICE_ENV,
  errorText,
  awaitOperation,
  memoryMib,
  outcomeVisible,
  postCreate,
  problems,
  sleep,
  stamp,
  summary,
  type Operation,
  type OperationPolling,
  type Summary,
} from './support.js';
import { waitUntil } from '../wait-until.js';

const NAMESPACE = 'sandboxes';
const TASK_QUEUE = 'sandbox-create';
const REFUSAL =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
  'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';
/** The waiting creates' deadline: far beyond any run, so no wait ends by it. */
const DEADLINE_MS = 4 * 3_600_000;
/**
 * How the bench reads operations: long-poll when the API and the worker share PostgreSQL (a
 * worker's write wakes the API's long-polls through `pg_notify`); on a SQLite file shared by two
 * processes nothing wakes the API's long-polls, so a GET every 100 ms.
 */
const POLLING: OperationPolling = process.env.BENCH_POSTGRES_URL
  ? { longPoll: true }
  : { everyMs: 100 };

/**
 * With BENCH_POSTGRES_URL (a role that may create databases), a database of its own for one
 * checkout; undefined otherwise (a SQLite file in DATA_DIR).
 * @returns the database's URL and the function that drops it
 */
async function ownDatabase(
  label: string,
): Promise<{ url: string; drop: () => Promise<void> } | undefined> {
  const admin = process.env.BENCH_POSTGRES_URL;
  if (!admin) return undefined;
  const name = `bench_waits_${label}_${process.pid}`;
  const run = async (sql: string) => {
    const client = new pg.Client({ connectionString: admin });
    await client.connect();
    try {
      await client.query(sql);
    } finally {
      await client.end();
    }
  };
  await run(`drop database if exists ${name}`);
  await run(`create database ${name}`);
  const url = new URL(admin);
  url.pathname = `/${name}`;
  return { url: url.toString(), drop: () => run(`drop database if exists ${name} with (force)`) };
}

/** The counts of a waits run. */
export interface WaitSizes extends GoalSizes {
  /** Runs of each one-at-a-time figure. */
  repeats: number;
  /** The at-rest window, ms. */
  windowMs: number;
  /** The largest size the baseline is run at. */
  baselineMax: number;
  /**
   * When the run must end (epoch ms; BENCH_END_BY): the fills for `crowd` and `max` stop then,
   * and their rows say "not run" with how far they got. Infinity: no end.
   */
  endAtMs: number;
}

/** The sizes (docs/benchmarks.md, "Sizes and how long a run takes"). */
export const FULL_WAITS: WaitSizes = {
  many: 1_000,
  crowd: 3_000,
  max: 10_000,
  atOnce: 100,
  repeats: 5,
  windowMs: 30_000,
  baselineMax: 1_000,
  endAtMs: Infinity,
};

/** `--quick`: a trial run (a few minutes); its figures are not the issue's. */
export const QUICK_WAITS: WaitSizes = {
  many: 100,
  crowd: 300,
  max: 500,
  atOnce: 20,
  repeats: 3,
  windowMs: 15_000,
  baselineMax: 300,
  endAtMs: Infinity,
};

/**
 * The sizes of this run: `--quick` or the full ones, each overridable by its env variable
 * (BENCH_WAITS_MANY, ...; BENCH_END_BY for `endAtMs`, read at `now`).
 */
export function waitSizesOf(
  quick: boolean,
  vars: NodeJS.ProcessEnv = process.env,
  now = Date.now(),
): WaitSizes {
  const base = quick ? QUICK_WAITS : FULL_WAITS;
  const env = (name: string, fallback: number) => {
    const raw = vars[name];
    return raw === undefined || raw === '' ? fallback : Number(raw);
  };
  return {
    many: env('BENCH_WAITS_MANY', base.many),
    crowd: env('BENCH_WAITS_CROWD', base.crowd),
    max: env('BENCH_WAITS_MAX', base.max),
    atOnce: env('BENCH_AT_ONCE', base.atOnce),
    repeats: env('BENCH_REPEATS', base.repeats),
    windowMs: env('BENCH_WINDOW_MS', base.windowMs),
    baselineMax: env('BENCH_BASELINE_MAX_WAITS', base.baselineMax),
    endAtMs: endOf(vars.BENCH_END_BY, now),
  };
}

/**
 * The instant BENCH_END_BY names, epoch ms: `HH:MM` (UTC, the next such time after `now`) or
 * an ISO 8601 date-time; Infinity when unset.
 * @throws Error when it is neither
 */
export function endOf(value: string | undefined, now = Date.now()): number {
  if (value === undefined || value.trim() === '') return Infinity;
  const clock = /^(\d{1,2}):(\d{2})$/.exec(value.trim());
  if (clock) {
    const at = new Date(now);
    at.setUTCHours(Number(clock[1]), Number(clock[2]), 0, 0);
    if (at.getTime() <= now) at.setUTCDate(at.getUTCDate() + 1);
    return at.getTime();
  }
  const at = Date.parse(value);
  if (Number.isNaN(at))
    throw new Error(`BENCH_END_BY=${value} is neither HH:MM (UTC) nor ISO 8601`);
  return at;
}

/** What one size measured at rest. */
export interface RestRow {
  checkout: string;
  waiting: number;
  /** Whether every create of this size had its pod created (else the figures are partial). */
  /** How many of `waiting` had their pod created (all, unless the fill's bound passed). */
  reached: number;
  sdk_requests_per_min: number;
  sdk_requests_per_waiting_create_per_min: number;
  sdk_requests_by_operation: Record<string, number>;
  server_requests_per_min: number;
  activity_slots_used: number;
  activity_slots_used_by_task_queue: Record<string, number>;
  worker_rss_mib: number;
  apiserver_requests_per_min: number;
  watches_open: number;
}

/** A create the bench started: its operation and sandbox. */
interface Create {
  operationId: string;
  sandboxId: string;
}

/** One checkout's servers and processes. */
class Rig {
  private worker?: ChildProcess;
  private apiProcess?: ChildProcess;
  readonly waiting: Create[] = [];
  private constructor(
    readonly checkout: Checkout,
    readonly devServer: DevServer,
    readonly devServerMetricsPort: number,
    readonly cluster: SimulatedCluster,
    readonly dataDir: string,
    readonly client: Client,
    private readonly connection: Connection,
    readonly apiPort: number,
    private workerMetricsPort: number,
    private readonly database: { url: string; drop: () => Promise<void> } | undefined,
  ) {}

  static async start(checkout: Checkout): Promise<Rig> {
    const dataDir = mkdtempSync(join(tmpdir(), `durable-sandbox-bench-waits-${checkout.label}-`));
    const devServerMetricsPort = await freePort();
    const devServer = await startDevServer({
      ui: false,
      metricsPort: devServerMetricsPort,
      startTimeoutMs: 600_000,
    });
    const cluster = await SimulatedCluster.start({ startupDelayMs: 100 });
    cluster.faults.neverReady(true);
    cluster.writeKubeconfig(join(dataDir, 'kubeconfig'), NAMESPACE);
    const connection = await Connection.connect({ address: devServer.address });
    const rig = new Rig(
      checkout,
      devServer,
      devServerMetricsPort,
      cluster,
      dataDir,
      new Client({ connection }),
      connection,
      await freePort(),
      await freePort(),
      await ownDatabase(checkout.label),
    );
    try {
      await rig.startProcesses();
    } catch (err) {
      await rig.stop();
      throw err;
    }
    return rig;
  }

  /** Starts the worker and the API, and waits until both answer. */
  private async startProcesses(): Promise<void> {
    this.startWorker();
    this.apiProcess = runInCheckout(this.checkout, 'src/api/main.ts', {
      ...this.env(),
      PORT: String(this.apiPort),
      CREATE_DEADLINE_MS: String(DEADLINE_MS),
    });
    const api = this.apiProcess;
    await waitUntil(
      async () => {
        if (api.exitCode !== null)
          throw new Error(
            `${this.checkout.label}: src/api/main.ts exited ${api.exitCode} at start`,
          );
        const response = await fetch(`${this.base}/readyz`).catch(() => undefined);
        return response?.status === 200;
      },
      { timeoutMs: 600_000, intervalMs: 200, what: `${this.checkout.label}: the API ready` },
    );
    await this.waitForWorker();
  }

  get base(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  get workerPid(): number {
    return this.worker?.pid ?? -1;
  }

  private env(): Record<string, string> {
    return {
      TEMPORAL_ADDRESS: this.devServer.address,
      TEMPORAL_TASK_QUEUE: TASK_QUEUE,
      KUBECONFIG: join(this.dataDir, 'kubeconfig'),
      SANDBOX_NAMESPACE: NAMESPACE,
      DATA_DIR: this.dataDir,
      // The default (src/config/index.ts): the window counts the orphan sweep's requests too (one
      // visibility list a sweep, plus a describe for each create absent from it).
      ORPHAN_SWEEP_INTERVAL_MS: '60000',
      ...BENCH_SERVICE_ENV,
      LOG_LEVEL: 'error',
      ...(this.database ? { DATABASE_URL: this.database.url } : {}),
    };
  }

  /** Starts the worker on a fresh metrics port. */
  startWorker(): void {
    this.worker = runInCheckout(this.checkout, 'src/worker/main.ts', {
      ...this.env(),
      METRICS_PORT: String(this.workerMetricsPort),
    });
  }

  async waitForWorker(): Promise<void> {
    await waitUntil(
      () =>
        this.workerMetrics().then(
          () => true,
          () => false,
        ),
      { timeoutMs: 600_000, intervalMs: 200, what: 'worker up' },
    );
  }

  /** SIGKILLs the worker (no graceful shutdown: its activities are simply gone). */
  async killWorker(): Promise<void> {
    if (this.worker) await stopChild(this.worker, 'SIGKILL');
    this.workerMetricsPort = await freePort();
  }

  workerMetrics() {
    return scrape(`http://127.0.0.1:${this.workerMetricsPort}/metrics`);
  }

  serverMetrics() {
    return scrape(`http://127.0.0.1:${this.devServerMetricsPort}/metrics`);
  }

  /** Pods the apiserver created so far (POST pods answered 201). */
  podsCreated(): number {
    return this.podCreates().length;
  }

  /** The POSTs of pods the apiserver answered 201, in arrival order. */
  podCreates() {
    return this.cluster.requestsWhere({ verb: 'create', resource: 'pods', status: 201 });
  }

  /** POSTs one create (disk 2048 on `base`: above any floor). */
  async postCreate(): Promise<Create> {
    const response = await postCreate(
      this.base,
      JSON.stringify({ template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 } }),
    );
    if (response.status !== 202)
      throw new Error(`POST answered ${response.status}: ${await response.text()}`);
    const op = (await response.json()) as Operation;
    return { operationId: op.id, sandboxId: op.sandbox_id };
  }

  /**
   * Starts creates until `count` wait (16 POSTs at a time) and waits until each has its pod.
   * Stops when no pod was created for 120 s (the rest never reached their wait), or at
   * `endAtMs` (the run's end, {@link runEndAtMs}: then `cut`).
   * @returns how many of the `count` wait (pod created), and whether the run's end cut it short
   */
  async fill(count: number, endAtMs = Infinity): Promise<{ reached: number; cut: boolean }> {
    const startedAtMs = Date.now();
    const before = this.podsCreated();
    const waitingBefore = this.waiting.length;
    const missing = Math.max(0, count - waitingBefore);
    let cut = false;
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(16, missing) }, async () => {
        while (next < missing) {
          if (Date.now() > endAtMs) {
            cut = true;
            return;
          }
          next++;
          this.waiting.push(await this.postCreate());
        }
      }),
    );
    const target = before + (this.waiting.length - waitingBefore);
    let seen = this.podsCreated();
    let progressAtMs = Date.now();
    while (this.podsCreated() < target) {
      if (this.podsCreated() !== seen) [seen, progressAtMs] = [this.podsCreated(), Date.now()];
      if (Date.now() - progressAtMs > 120_000) break;
      if (Date.now() > endAtMs) {
        cut = true;
        break;
      }
      await sleep(200);
    }
    const reached = waitingBefore + Math.min(missing, this.podsCreated() - before);
    const seconds = (Date.now() - startedAtMs) / 1000;
    if (missing > 1)
      console.log(
        `  ${stamp()} ${this.checkout.label}: filled to ${count} (${missing} creates, ${reached} waiting${cut ? ', cut by the run end' : ''}) in ${seconds.toFixed(0)} s (${(missing / seconds).toFixed(1)} creates/s)`,
      );
    // The waits start right after their pod is recorded; let the last ones subscribe.
    if (missing > 0) await sleep(Math.min(30_000, 1_000 + 3 * missing));
    return { reached, cut };
  }

  /** Reads an operation until its outcome is visible (long-poll). */
  async outcome(create: Create): Promise<Operation> {
    const op = (await (
      await api(this.base, `/v1/operations/${create.operationId}`)
    ).json()) as Operation;
    return awaitOperation(this.base, op, outcomeVisible, POLLING);
  }

  /**
   * Records the node's refusal of each create's pod now; resolves with ms from then to the
   * operation showing `failed` (NaN and a problem when it ended otherwise).
   */
  async refuse(creates: Create[]): Promise<number[]> {
    const recordedAtMs = performance.now();
    for (const create of creates)
      this.cluster.node.recordSandboxFailure(NAMESPACE, podNameFor(create.sandboxId, 1), REFUSAL);
    return Promise.all(creates.map((create) => this.timeToOutcome(create, recordedAtMs, 'failed')));
  }

  async timeToOutcome(create: Create, sinceMs: number, status: string): Promise<number> {
    try {
      const op = await this.outcome(create);
      if (op.status !== status) {
        problems.push(
          `${this.checkout.label}: ${op.id} ended ${op.status} ${JSON.stringify(op.error)}, expected ${status}`,
        );
        return NaN;
      }
      return performance.now() - sinceMs;
    } catch (err) {
      problems.push(`${this.checkout.label}: ${create.operationId}: ${errorText(err)}`);
      return NaN;
    }
  }

  /** Takes `count` creates off the waiting list (the newest). */
  take(count: number): Create[] {
    return this.waiting.splice(Math.max(0, this.waiting.length - count), count);
  }

  async stop(): Promise<void> {
    if (this.apiProcess) await stopChild(this.apiProcess, 'SIGTERM');
    if (this.worker) await stopChild(this.worker, 'SIGTERM');
    await this.connection.close();
    await this.cluster.close();
    await this.devServer.stop();
    await this.database?.drop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** Long polls of the SDK (not requests a waiting create causes). */
const isLongPoll = (operation: string) => /^Poll/.test(operation);

/** The at-rest figures over the window. */
async function atRest(rig: Rig, waiting: number, reached: number, windowMs: number) {
  const sdkBefore = await rig.workerMetrics();
  const serverBefore = await rig.serverMetrics();
  const apiserverBefore = rig.cluster.requestMark();
  const watches = rig.cluster.openWatches();
  await sleep(windowMs);
  const sdkAfter = await rig.workerMetrics();
  const serverAfter = await rig.serverMetrics();
  const perMin = (delta: number) => Math.round(((delta * 60_000) / windowMs) * 10) / 10;
  const sdkDelta = (s: typeof sdkAfter) =>
    sumOf(s, 'temporal_request_total', { operation: (op) => !isLongPoll(op) });
  const byOpBefore = sumBy(sdkBefore, 'temporal_request_total', 'operation');
  const byOp: Record<string, number> = {};
  for (const [op, value] of Object.entries(
    sumBy(sdkAfter, 'temporal_request_total', 'operation'),
  )) {
    const delta = perMin(value - (byOpBefore[op] ?? 0));
    if (delta > 0) byOp[op] = delta;
  }
  const serverDelta = (s: typeof serverAfter) =>
    sumOf(s, 'service_requests', { operation: (op) => !isLongPoll(op) });
  const slotsByQueue = sumBy(
    sdkAfter.filter((s) => s.labels.worker_type === 'ActivityWorker'),
    'temporal_worker_task_slots_used',
    'task_queue',
  );
  const sdkPerMin = perMin(sdkDelta(sdkAfter) - sdkDelta(sdkBefore));
  const row: RestRow = {
    checkout: rig.checkout.label,
    waiting,
    reached,
    sdk_requests_per_min: sdkPerMin,
    sdk_requests_per_waiting_create_per_min:
      Math.round((sdkPerMin / Math.max(1, reached)) * 100) / 100,
    sdk_requests_by_operation: byOp,
    server_requests_per_min: perMin(serverDelta(serverAfter) - serverDelta(serverBefore)),
    activity_slots_used: slotsByQueue[TASK_QUEUE] ?? 0,
    activity_slots_used_by_task_queue: slotsByQueue,
    worker_rss_mib: memoryMib(rig.workerPid, 'VmRSS'),
    apiserver_requests_per_min: perMin(
      rig.cluster.requestsWhere({ after: apiserverBefore }).length,
    ),
    watches_open: Math.max(watches, rig.cluster.openWatches()),
  };
  console.log(`  ${stamp()} ${JSON.stringify(row)}`);
  return row;
}

/** One refusal at a time, `repeats` times, topping the waits back up to `size` after each. */
async function oneRefusal(rig: Rig, size: number, repeats: number): Promise<Summary> {
  const runs: number[] = [];
  for (let i = 0; i < repeats; i++) {
    runs.push(...(await rig.refuse(rig.take(1))));
    await rig.fill(size);
  }
  const result = summary(runs);
  console.log(
    `  ${stamp()} ${rig.checkout.label}: one refusal with ${size} waiting ${JSON.stringify(result)}`,
  );
  return result;
}

/** A create's POST -> its pod's POST at the apiserver, `repeats` times; each joins the waits. */
async function postToPod(rig: Rig, repeats: number, label: string): Promise<Summary> {
  const runs: number[] = [];
  for (let i = 0; i < repeats; i++) {
    const before = rig.podsCreated();
    const postedAtMs = Date.now();
    const create = await rig.postCreate();
    rig.waiting.push(create);
    try {
      await waitUntil(() => rig.podsCreated() > before, {
        timeoutMs: 120_000,
        intervalMs: 200,
        what: 'the pod created',
      });
      const podPost = rig.podCreates()[before];
      runs.push((podPost?.at ?? NaN) - postedAtMs);
    } catch {
      runs.push(NaN);
      problems.push(`${rig.checkout.label}: no pod within 120 s of a create's POST (${label})`);
    }
    await sleep(500);
  }
  const result = summary(runs);
  console.log(
    `  ${stamp()} ${rig.checkout.label}: POST -> pod created, ${label} ${JSON.stringify(result)}`,
  );
  return result;
}

/**
 * SIGKILL the worker with `size` waiting: refusals recorded while no worker runs and after the
 * new one started, pods made ready, cancels (DELETE of the sandbox); each must end as it
 * should (failed, succeeded, cancelled). The others must still be waiting.
 */
async function workerKill(rig: Rig, size: number, atOnce: number) {
  const quarter = Math.max(1, Math.floor(atOnce / 4));
  const refusedWhileDown = rig.take(quarter);
  const refusedAfter = rig.take(quarter);
  const readyAfter = rig.take(quarter);
  const cancelledAfter = rig.take(quarter);
  await rig.killWorker();
  console.log(`  ${stamp()} ${rig.checkout.label}: worker SIGKILLed with ${size} waiting`);
  for (const create of refusedWhileDown)
    rig.cluster.node.recordSandboxFailure(NAMESPACE, podNameFor(create.sandboxId, 1), REFUSAL);
  await sleep(2_000);
  rig.startWorker();
  await rig.waitForWorker();
  const restartedAtMs = performance.now();
  for (const create of refusedAfter)
    rig.cluster.node.recordSandboxFailure(NAMESPACE, podNameFor(create.sandboxId, 1), REFUSAL);
  for (const create of readyAfter)
    rig.cluster.node.makeReady(NAMESPACE, podNameFor(create.sandboxId, 1));
  await Promise.all(
    cancelledAfter.map((create) =>
      api(rig.base, `/v1/sandboxes/${create.sandboxId}`, { method: 'DELETE' }).then((r) =>
        r.text(),
      ),
    ),
  );
  const ends = await Promise.all([
    ...[...refusedWhileDown, ...refusedAfter].map((c) =>
      rig.timeToOutcome(c, restartedAtMs, 'failed'),
    ),
    ...readyAfter.map((c) => rig.timeToOutcome(c, restartedAtMs, 'succeeded')),
    ...cancelledAfter.map((c) => rig.timeToOutcome(c, restartedAtMs, 'cancelled')),
  ]);
  // The rest still wait: none failed or ended by the kill (every one, 16 GETs at a time).
  const rest = [...rig.waiting];
  let stillWaiting = 0;
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      while (next < rest.length) {
        const c = rest[next++]!;
        const op = (await (
          await api(rig.base, `/v1/operations/${c.operationId}`)
        ).json()) as Operation;
        if (op.status === 'running') stillWaiting++;
        else
          problems.push(
            `${rig.checkout.label}: ${op.id} ended ${op.status} after the worker kill, expected still waiting`,
          );
      }
    }),
  );
  const decided = summary(ends);
  const right = decided.n + stillWaiting;
  const expected = ends.length + rest.length;
  console.log(
    `  ${stamp()} ${rig.checkout.label}: after the kill ${decided.n}/${ends.length} decided as they should (ms after the new worker started: ${JSON.stringify(decided)}), ${stillWaiting}/${rest.length} still waiting`,
  );
  return { killEndedRight: right, killExpected: expected, killDecided: decided };
}

/**
 * Why the baseline is not run at a size above its cap: each of its waits holds one of the
 * worker's 2,000 activity slots and heartbeats every 2 s (issue 18).
 */
function baselineCapReason(size: number, cap: number): string {
  return (
    `each waiting create holds one of the baseline worker's 2,000 activity slots and heartbeats ` +
    `every 2 s; the bench runs it up to ${cap} waiting, not ${size}`
  );
}

/** Why a size was not run: the run's end (BENCH_END_BY) came while filling it. */
function cutReason(size: number, reached: number): string {
  return endReason(`while filling it, with ${reached} of ${size} waiting`);
}

/** Which phases of a checkout's waits a call runs: up to `many`, from `crowd` on, or all. */
export type WaitsPart = 'small' | 'large' | 'all';

/** Why a phase was not run: the run's end (BENCH_END_BY) came before or during it. */
function endReason(what: string): string {
  return `the run's end (BENCH_END_BY) came ${what}`;
}

/**
 * Runs one phase of a checkout, unless the run's end (`endAtMs`) has passed: then its rows
 * `ids` are "not run". An error is recorded as a problem (its rows stay unmeasured, an error
 * in the table) and the run goes on.
 */
async function phase(
  label: string,
  name: string,
  run: { endAtMs: number; notRun: NonNullable<GoalFigures['notRun']>; ids: GoalRowId[] },
  fn: () => Promise<void>,
): Promise<void> {
  if (Date.now() > run.endAtMs) {
    for (const id of run.ids) run.notRun[id] ??= endReason('before this phase');
    console.log(`  ${stamp()} ${label}: ${name} not run (the run's end came first)`);
    return;
  }
  const startedAtMs = Date.now();
  console.log(`  ${stamp()} ${label}: ${name}`);
  try {
    await fn();
  } catch (err) {
    const message = errorText(err);
    problems.push(`${label}: ${name}: ${message}`);
    console.log(`  ${stamp()} ${label}: ${name} failed: ${message}\n${(err as Error).stack}`);
  }
  console.log(
    `  ${stamp()} ${label}: ${name} took ${Math.round((Date.now() - startedAtMs) / 1000)} s`,
  );
}

const MANY_ROWS: GoalRowId[] = [
  'oneRefusalWithMany',
  'atOnceWithMany',
  'requestsPerWait',
  'slotsPerWait',
  'rssWithMany',
];

/**
 * One checkout on a rig of its own: the waits figures of the goal table for `part` (`small`:
 * none, 1 and `many` waiting and the worker kill; `large`: none and 1 waiting, then `crowd`
 * and `max`; `all`: both on one rig), and the at-rest rows.
 */
async function measureCheckout(
  checkout: Checkout,
  sizes: WaitSizes,
  part: WaitsPart = 'all',
): Promise<{ figures: GoalFigures; rows: RestRow[] }> {
  const notRun: NonNullable<GoalFigures['notRun']> = {};
  const reached: NonNullable<GoalFigures['reached']> = {};
  const figures: GoalFigures = { killDeadlineMs: DEADLINE_MS, notRun, reached };
  const rows: RestRow[] = [];
  const label = checkout.label;
  const cap = label === 'baseline' ? sizes.baselineMax : Infinity;
  const small = part !== 'large';
  const large = part !== 'small';
  const run = (ids: GoalRowId[]) => ({ endAtMs: sizes.endAtMs, notRun, ids });
  if (large && !(sizes.crowd > 0 && sizes.crowd <= cap))
    notRun.postToPodWithCrowd =
      sizes.crowd > 0 ? baselineCapReason(sizes.crowd, cap) : 'BENCH_WAITS_CROWD=0';
  if (large && !(sizes.max > 0 && sizes.max <= cap))
    notRun.max = sizes.max > 0 ? baselineCapReason(sizes.max, cap) : 'BENCH_WAITS_MAX=0';
  if (small && sizes.many > cap)
    for (const id of [...MANY_ROWS, 'kill'] as const)
      notRun[id] = baselineCapReason(sizes.many, cap);
  const largeToRun = large && (notRun.postToPodWithCrowd === undefined || notRun.max === undefined);
  if (!small && !largeToRun) return { figures, rows };
  if (Date.now() > sizes.endAtMs) {
    const ids = [
      ...(small ? [...MANY_ROWS, 'kill'] : []),
      ...(large ? ['postToPodWithCrowd', 'max'] : []),
    ];
    for (const id of ids as GoalRowId[]) notRun[id] ??= endReason('before this checkout started');
    return { figures, rows };
  }
  console.log(`\n${stamp()} ${label} (${checkout.dir}), ${part} sizes:`);
  const rig = await Rig.start(checkout);
  try {
    await phase(label, 'none and 1 waiting', run([]), async () => {
      // Warm-up: one create refused, so no figure pays a cold start.
      await rig.fill(1);
      await rig.refuse(rig.take(1));
      figures.postToPodNoneWaiting = await postToPod(rig, sizes.repeats, 'none waiting');
      // Those creates wait now; keep one, refuse the others (they end, and free their waits).
      await rig.refuse(rig.take(rig.waiting.length - 1));
      const one = await atRest(rig, 1, (await rig.fill(1)).reached, sizes.windowMs);
      rows.push(one);
      const oneRefusal1 = await oneRefusal(rig, 1, sizes.repeats);
      if (small) {
        figures.rssWith1Mib = one.worker_rss_mib;
        figures.oneRefusalWith1 = oneRefusal1;
      }
      if (large) figures.oneRefusalWith1BesideMax = oneRefusal1;
    });
    if (small && sizes.many <= cap) {
      await phase(label, `${sizes.many} waiting`, run(MANY_ROWS), async () => {
        const fill = await rig.fill(sizes.many, sizes.endAtMs);
        if (fill.cut) {
          for (const id of MANY_ROWS) notRun[id] = cutReason(sizes.many, fill.reached);
          return;
        }
        reached.many = fill.reached;
        const many = await atRest(rig, sizes.many, reached.many, sizes.windowMs);
        rows.push(many);
        figures.rssWithManyMib = many.worker_rss_mib;
        figures.requestsPerWaitPerMin = many.sdk_requests_per_waiting_create_per_min;
        figures.slotsPerWait = many.activity_slots_used / Math.max(1, reached.many);
        figures.oneRefusalWithMany = await oneRefusal(rig, sizes.many, sizes.repeats);
        figures.atOnceWithMany = summary(await rig.refuse(rig.take(sizes.atOnce)));
        console.log(
          `  ${stamp()} ${label}: ${sizes.atOnce} refusals at once with ${sizes.many} waiting ${JSON.stringify(figures.atOnceWithMany)}`,
        );
      });
      await phase(label, `worker SIGKILL with ${sizes.many} waiting`, run(['kill']), async () => {
        const fill = await rig.fill(sizes.many, sizes.endAtMs);
        if (fill.cut) {
          notRun.kill = cutReason(sizes.many, fill.reached);
          return;
        }
        Object.assign(figures, await workerKill(rig, sizes.many, sizes.atOnce));
      });
    }
    if (large && notRun.postToPodWithCrowd === undefined) {
      await phase(label, `${sizes.crowd} waiting`, run(['postToPodWithCrowd']), async () => {
        const fill = await rig.fill(sizes.crowd, sizes.endAtMs);
        if (fill.cut) {
          notRun.postToPodWithCrowd = cutReason(sizes.crowd, fill.reached);
          return;
        }
        reached.crowd = fill.reached;
        rows.push(await atRest(rig, sizes.crowd, fill.reached, sizes.windowMs));
        figures.postToPodWithCrowd = await postToPod(rig, sizes.repeats, `${sizes.crowd} waiting`);
      });
    }
    if (large && notRun.max === undefined) {
      await phase(label, `${sizes.max} waiting`, run(['max']), async () => {
        const fill = await rig.fill(sizes.max, sizes.endAtMs);
        if (fill.cut) {
          notRun.max = cutReason(sizes.max, fill.reached);
          return;
        }
        reached.max = fill.reached;
        rows.push(await atRest(rig, sizes.max, fill.reached, sizes.windowMs));
        if (fill.reached >= sizes.max)
          figures.oneRefusalWithMax = await oneRefusal(rig, sizes.max, sizes.repeats);
      });
    }
  } finally {
    await rig.stop();
  }
  return { figures, rows };
}

/**
 * Runs the waits figures for `checkouts` (default: every checkout of the run, baseline first)
 * at `sizes` (default: this run's), the phases `part` (default: all), calling `onFigures` after
 * each.
 * @returns the sizes, the at-rest rows and each checkout's figures; failed checks go to
 *   `problems`
 */
export async function measureWaitFigures(
  quick: boolean,
  onFigures: (labelled: { label: string; figures: GoalFigures }) => void = () => undefined,
  checkouts: Checkout[] = checkoutsOfRun(),
  sizes: WaitSizes = waitSizesOf(quick),
  part: WaitsPart = 'all',
) {
  console.log(`waits sizes: ${JSON.stringify(sizes)}`);
  const rows: RestRow[] = [];
  const figures: Array<{ label: string; figures: GoalFigures }> = [];
  for (const checkout of checkouts) {
    try {
      const measured = await measureCheckout(checkout, sizes, part);
      rows.push(...measured.rows);
      figures.push({ label: checkout.label, figures: measured.figures });
    } catch (err) {
      // Its rows stay unmeasured (errors in the table); the other checkout still runs.
      problems.push(`${checkout.label}: waits: ${errorText(err)}`);
      figures.push({ label: checkout.label, figures: {} });
    }
    onFigures(figures.at(-1)!);
  }
  console.log('\nat rest (side by side):');
  for (const row of rows) console.log(`  ${JSON.stringify(row)}`);
  return { sizes, rows, figures };
}
