/**
 * `npm run chaos`: a bounded reliability run on loopback (docs/reliability.md). It runs
 * the stack's parts as in production — a Temporal dev server (state in a file, so it can be
 * restarted), the simulated apiserver over HTTP, a SQLite store, the API in this process and
 * the worker as a child process (`src/worker/main.ts`, so it can be SIGKILLed) — and drives the
 * fault matrix over HTTP:
 *
 *   worker SIGKILL mid-wait (×20), dev server restart mid-wait, each apiserver fault of
 *   src/kubernetes/apiserver-errors.ts (×10), 500 concurrent mixed creates (refused, succeeding,
 *   cancelled, deleted), 10,000 random request bodies.
 *
 * For each it prints runs, correct outcomes, stuck (not done within the bound, or done with the
 * sandbox still `creating`), pods leaked (a pod whose sandbox is not `running`), executions not
 * retired (an active execution of a sandbox that is `failed`, `deleted` or `lost`), and 5xx
 * answers the scenario did not expect (503 `unavailable` is the expected answer while the
 * cluster cannot be used). Exit code 1 unless every figure is as it should be.
 *
 * Flags: `--quick` (3 kills, ×3 faults, 100 mixed, 1,000 bodies), `--only <scenario prefix>`,
 * `--topology` (the fault matrix on the production topology instead: tools/chaos-topology.ts).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { Client, Connection } from '@temporalio/client';
import fc from 'fast-check';
import { pino } from 'pino';
import { createApp } from '../src/api/app.js';
import { READINESS_CACHE_MS } from '../src/api/readiness.js';
import { freePort } from '../src/process/free-port.js';
import { loadConfig } from '../src/config/index.js';
import { ROOMY_TENANT_LIMITS_ENV } from './roomy-tenant-limits.js';
import { createKubernetesClient } from '../src/kubernetes/client.js';
import { POD_LABELS } from '../src/kubernetes/pod-spec.js';
import {
  auditScenario,
  faultRow,
  isPerfect,
  renderFaultTable,
  type FaultRow,
  type ScenarioAudit,
  type ScenarioResult,
} from '../environments/fault-report.js';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { openStore } from '../src/store/index.js';
import { startDevServer, type DevServer } from '../environments/dev-server/dev-server.js';

const args = process.argv.slice(2);
const QUICK = args.includes('--quick');
const ONLY = args.includes('--only') ? args[args.indexOf('--only') + 1] : undefined;
const COUNTS = QUICK
  ? { kills: 3, faults: 3, mixed: 100, bodies: 1_000 }
  : { kills: 20, faults: 10, mixed: 500, bodies: 10_000 };
if (args.includes('--topology')) {
  const { runTopologyMatrix } = await import('./chaos-topology.js');
  process.exit(await runTopologyMatrix({ quick: QUICK, only: ONLY }));
}
const TOKEN = 'chaos-token';
const TENANT = 'chaos';
const NODE_DELAY_MS = 1_500;
/** How long a scenario's creates may take to be done, in ms (a loaded 2-core machine). */
const DONE_BOUND_MS = 600_000;

interface Operation {
  id: string;
  type: string;
  status: string;
  done: boolean;
  phase: string;
  sandbox_id: string;
  error: { code: string; message: string } | null;
}

const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-chaos-'));
const logger = pino({ level: 'fatal' });
let unexpected5xx = 0;
let expected503 = false;

// --- the stack --------------------------------------------------------------------------

const temporalPort = await freePort();
const temporalDb = join(dataDir, 'temporal.db');
let devServer: DevServer = await startDevServer({
  port: temporalPort,
  ui: false,
  dbFile: temporalDb,
});
const cluster = await SimulatedCluster.start({ startupDelayMs: NODE_DELAY_MS });
const kubeconfigPath = join(dataDir, 'kubeconfig');
cluster.writeKubeconfig(kubeconfigPath, 'sandboxes');
const kubernetes = createKubernetesClient({ kubeconfigPath, namespace: 'sandboxes' });
const store = await openStore({ sqliteFile: join(dataDir, 'store.db') });
const taskQueue = `chaos-${Date.now()}`;
const env = {
  TEMPORAL_ADDRESS: devServer.address,
  TEMPORAL_TASK_QUEUE: taskQueue,
  KUBECONFIG: kubeconfigPath,
  SANDBOX_NAMESPACE: 'sandboxes',
  DATA_DIR: dataDir,
  API_TOKENS: `${TENANT}:${TOKEN}`,
  SYNC_READINESS_BUDGET_MS: '60000',
  WATCH_RETRY_DELAY_MS: '200',
  ORPHAN_SWEEP_INTERVAL_MS: '0',
  LOG_LEVEL: 'error',
  LOG_FORMAT: 'json',
  // 500 concurrent creates of one tenant: a chaos run, not a shared installation's limits.
  TENANT_LIMITS: ROOMY_TENANT_LIMITS_ENV,
};
const config = loadConfig(env);
const connection = await Connection.connect({ address: devServer.address });
const temporal = new Client({ connection, namespace: config.temporalNamespace });
const app = createApp({ temporal, store, config, logger, kubernetes });
const server = await new Promise<Server>((resolve) => {
  const listening = app.listen(0, '127.0.0.1', () => resolve(listening));
});
const apiUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

let worker: ChildProcess | undefined;
let workerOutput = '';
let keepWorker = true;

// Ctrl-C or a timeout: leave no worker or dev server behind.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    keepWorker = false;
    worker?.kill('SIGKILL');
    void devServer.stop().finally(() => process.exit(130));
  });
}

/** Starts the worker process; it is started again whenever it exits while the run goes on. */
async function startWorker(): Promise<void> {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/worker/main.ts'], {
    env: { ...process.env, ...env, METRICS_PORT: String(await freePort()) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  child.stdout?.on('data', (chunk: Buffer) => (workerOutput = (workerOutput + chunk).slice(-8000)));
  child.stderr?.on('data', (chunk: Buffer) => (workerOutput = (workerOutput + chunk).slice(-8000)));
  child.once('exit', () => {
    if (worker === child && keepWorker) void startWorker(); // as a supervisor would
  });
  worker = child;
}

async function sleep(ms: number): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, ms));
}

// --- HTTP ---------------------------------------------------------------------------------

async function call(
  method: string,
  path: string,
  body?: string,
): Promise<{ status: number; json: Record<string, unknown> }> {
  const response = await fetch(`${apiUrl}${path}`, {
    method,
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body,
  });
  const text = await response.text();
  if (response.status >= 500) {
    const code = (JSON.parse(text) as { error?: { code?: string } }).error?.code;
    if (!(expected503 && response.status === 503 && code === 'unavailable')) unexpected5xx += 1;
  }
  let json: Record<string, unknown> = {};
  try {
    json = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // not JSON: counted by status only
  }
  return { status: response.status, json };
}

function createBody(diskMib: number): string {
  return JSON.stringify({
    template: 'base',
    resources: { cpu: 1, memory_mib: 256, disk_mib: diskMib },
  });
}

async function create(diskMib: number): Promise<Operation | { status: number; code: string }> {
  const { status, json } = await call('POST', '/v1/sandboxes', createBody(diskMib));
  if (status === 202) return json as unknown as Operation;
  return { status, code: String((json.error as { code?: string } | undefined)?.code) };
}

async function operation(id: string): Promise<Operation> {
  return (await call('GET', `/v1/operations/${id}`)).json as unknown as Operation;
}

/** Polls until every operation is done or the bound passes; returns the last answers. */
async function settle(ids: string[], boundMs = DONE_BOUND_MS): Promise<Map<string, Operation>> {
  const last = new Map<string, Operation>();
  const deadlineAtMs = Date.now() + boundMs;
  let pending = [...ids];
  while (pending.length > 0 && Date.now() < deadlineAtMs) {
    const batch = pending.slice(0, 50);
    for (const op of await Promise.all(batch.map(operation))) last.set(op.id, op);
    pending = pending.filter((id) => !last.get(id)?.done);
    if (pending.length > 0) await sleep(pending.length > 50 ? 50 : 250);
  }
  return last;
}

async function waitForPhase(id: string, phase: string, boundMs = 30_000): Promise<Operation> {
  const deadlineAtMs = Date.now() + boundMs;
  for (;;) {
    const op = await operation(id);
    if (op.phase === phase || op.done || Date.now() > deadlineAtMs) return op;
    await sleep(50);
  }
}

// --- checks -------------------------------------------------------------------------------

/** The audit of `sandboxIds` (environments/fault-report.ts) from the cluster and the store. */
async function audit(sandboxIds: string[]): Promise<ScenarioAudit> {
  const pods = await kubernetes.core.listNamespacedPod({ namespace: 'sandboxes' });
  const db = new Database(join(dataDir, 'store.db'), { readonly: true });
  try {
    const stateOf = db.prepare('select state from sandboxes where id = ?');
    const activeOf = db.prepare(
      "select count(*) as n from executions where sandbox_id = ? and state = 'active'",
    );
    const states = new Map<string, string>();
    const activeExecutions = new Set<string>();
    for (const id of new Set(sandboxIds)) {
      const row = stateOf.get(id) as { state: string } | undefined;
      if (row) states.set(id, row.state);
      if ((activeOf.get(id) as { n: number }).n > 0) activeExecutions.add(id);
    }
    return auditScenario(sandboxIds, {
      podSandboxIds: pods.items.map((pod) => pod.metadata?.labels?.[POD_LABELS.sandboxId]),
      states,
      activeExecutions,
    });
  } finally {
    db.close();
  }
}

/** Runs a scenario: `body` reports its creates; the row adds the audit and the 5xx answers. */
async function scenario(
  name: string,
  body: () => Promise<ScenarioResult>,
): Promise<FaultRow | undefined> {
  if (ONLY && !name.startsWith(ONLY)) return undefined;
  const started = Date.now();
  const before5xx = unexpected5xx;
  const result = await body();
  await sleep(500); // let the last compensations' deletes land
  const row = faultRow(
    name,
    result,
    await audit(result.sandboxIds),
    { unexpected5xx: unexpected5xx - before5xx },
    started,
  );
  process.stderr.write(`${name}: ${JSON.stringify(row)}\n`);
  return row;
}

/** Creates `count` sandboxes concurrently and checks each ends as `expected`. */
async function createsEnding(
  count: number,
  diskMib: number,
  expected: (op: Operation | { status: number; code: string }) => boolean,
) {
  const answers = await Promise.all(Array.from({ length: count }, () => create(diskMib)));
  const accepted = answers.filter((a): a is Operation => 'id' in a);
  const done = await settle(accepted.map((op) => op.id));
  const finals = answers.map((a) => ('id' in a ? (done.get(a.id) ?? a) : a));
  return {
    runs: count,
    correct: finals.filter(expected).length,
    notDone: accepted.filter((op) => !done.get(op.id)?.done).length,
    sandboxIds: accepted.map((op) => op.sandbox_id),
  };
}

const failedWith = (code: string) => (op: Operation | { status: number; code: string }) =>
  'id' in op ? op.status === 'failed' && op.error?.code === code : op.code === code;
const succeeded = (op: Operation | { status: number; code: string }) =>
  'id' in op && op.status === 'succeeded';
const refusedUnavailable = (op: Operation | { status: number; code: string }) =>
  !('id' in op) && op.status === 503 && op.code === 'unavailable';

// --- scenarios ----------------------------------------------------------------------------

const rows: Array<FaultRow | undefined> = [];
await startWorker();
// The worker is serving once a create succeeds.
await settle([((await create(2048)) as Operation).id], 240_000);

rows.push(
  await scenario(`worker SIGKILL mid-wait ×${COUNTS.kills}`, async () => {
    const ids: string[] = [];
    const sandboxIds: string[] = [];
    for (let i = 0; i < COUNTS.kills; i += 1) {
      const op = (await create(2048)) as Operation;
      ids.push(op.id);
      sandboxIds.push(op.sandbox_id);
      await waitForPhase(op.id, 'waiting_for_ip');
      worker?.kill('SIGKILL'); // restarted by its supervisor (startWorker)
      await settle([op.id]);
    }
    const done = await settle(ids);
    return {
      runs: ids.length,
      correct: ids.filter((id) => done.get(id)?.status === 'succeeded').length,
      notDone: ids.filter((id) => !done.get(id)?.done).length,
      sandboxIds,
    };
  }),
);

rows.push(
  await scenario('dev server restart mid-wait', async () => {
    const ops = [(await create(2048)) as Operation, (await create(300)) as Operation];
    await waitForPhase(ops[0]!.id, 'waiting_for_ip');
    await devServer.stop();
    devServer = await startDevServer({ port: temporalPort, ui: false, dbFile: temporalDb });
    const done = await settle(ops.map((op) => op.id));
    return {
      runs: ops.length,
      correct:
        Number(done.get(ops[0]!.id)?.status === 'succeeded') +
        Number(failedWith('invalid_request')(done.get(ops[1]!.id) ?? ops[1]!)),
      notDone: ops.filter((op) => !done.get(op.id)?.done).length,
      sandboxIds: ops.map((op) => op.sandbox_id),
    };
  }),
);

const n = COUNTS.faults;
const faults = cluster.faults;
rows.push(
  await scenario(`LimitRange 403 ×${n}`, async () => {
    faults.limitEphemeralStorage('2Gi');
    try {
      return await createsEnding(n, 3000, failedWith('invalid_request'));
    } finally {
      faults.limitEphemeralStorage(null);
    }
  }),
);
rows.push(
  await scenario(`422 Invalid ×${n}`, async () => {
    faults.failNextRequests('POST', 'pods', n, 422);
    return createsEnding(n, 2048, failedWith('invalid_request'));
  }),
);
rows.push(
  await scenario(`404 namespace missing ×${n}`, async () => {
    faults.failNextRequests('POST', 'pods', n, 404);
    return createsEnding(n, 2048, failedWith('invalid_request'));
  }),
);
rows.push(
  await scenario(`ResourceQuota 403 ×${n}`, async () => {
    faults.quotaPods({ name: 'sandbox-quota', pods: 0 });
    try {
      return await createsEnding(n, 2048, failedWith('quota_exceeded'));
    } finally {
      faults.quotaPods(null);
    }
  }),
);
for (const [label, fault] of [
  ['RBAC 403 (create pods denied)', () => faults.deny('create', 'pods', true)],
  ['401 on every request', () => faults.rejectCredentials(true)],
] as const) {
  rows.push(
    await scenario(`${label} ×${n}`, async () => {
      fault();
      expected503 = true;
      await sleep(READINESS_CACHE_MS + 100); // the readiness report is cached
      try {
        return await createsEnding(n, 2048, refusedUnavailable);
      } finally {
        faults.deny('create', 'pods', false);
        faults.rejectCredentials(false);
        await sleep(READINESS_CACHE_MS + 100);
        expected503 = false;
      }
    }),
  );
}
for (const status of [401, 429, 500, 503]) {
  rows.push(
    await scenario(`${status} once, then accepted ×${n}`, async () => {
      faults.failNextRequests('POST', 'pods', n, status);
      return createsEnding(n, 2048, succeeded);
    }),
  );
}

rows.push(
  await scenario(`${COUNTS.mixed} concurrent mixed creates`, async () => {
    const kinds = ['refused', 'succeeding', 'cancelled', 'deleted'] as const;
    const plan = Array.from({ length: COUNTS.mixed }, (_, i) => kinds[i % kinds.length]!);
    const runs = await Promise.all(
      plan.map(async (kind) => {
        const created = await create(kind === 'refused' ? 300 : 2048);
        // Once a refusal has taught the rootfs floor, a refused create is answered 400 before
        // 202 (docs/configuration.md, "Templates"): the right answer, with no operation to follow.
        if (!('id' in created)) return { kind, early: created };
        const op = created;
        let deleteOp: string | undefined;
        if (kind === 'cancelled') await call('POST', `/v1/operations/${op.id}/cancel`);
        if (kind === 'deleted') {
          deleteOp = (
            (await call('DELETE', `/v1/sandboxes/${op.sandbox_id}`)).json as { id?: string }
          ).id;
        }
        return { kind, op, deleteOp };
      }),
    );
    const ids = runs.flatMap((run) =>
      run.op ? [run.op.id, ...(run.deleteOp ? [run.deleteOp] : [])] : [],
    );
    const done = await settle(ids);
    const sandboxState = async (id: string) =>
      ((await call('GET', `/v1/sandboxes/${id}`)).json as { state?: string }).state;
    let correct = 0;
    const wrong = new Map<string, number>();
    for (const run of runs) {
      if (!run.op) {
        const early = run.early ?? { status: 0, code: 'none' };
        if (run.kind === 'refused' && early.status === 400 && early.code === 'invalid_request') {
          correct += 1;
        } else {
          const key = `${run.kind}: answered ${early.status} ${early.code}`;
          wrong.set(key, (wrong.get(key) ?? 0) + 1);
        }
        continue;
      }
      const final = done.get(run.op.id);
      if (!final?.done) continue;
      const before = correct;
      if (run.kind === 'refused') correct += Number(failedWith('invalid_request')(final));
      if (run.kind === 'succeeding') correct += Number(final.status === 'succeeded');
      if (run.kind === 'cancelled') {
        // A cancel that came after the sandbox ran answers 409 already_done: it succeeded.
        correct += Number(final.status === 'cancelled' || final.status === 'succeeded');
      }
      if (run.kind === 'deleted') {
        const deleted = run.deleteOp ? done.get(run.deleteOp) : undefined;
        correct += Number(
          deleted?.status === 'succeeded' && (await sandboxState(run.op.sandbox_id)) === 'deleted',
        );
      }
      if (correct === before) {
        const key = `${run.kind}: ${final.status} ${final.error?.code ?? ''}`.trim();
        wrong.set(key, (wrong.get(key) ?? 0) + 1);
      }
    }
    if (wrong.size > 0) process.stderr.write(`incorrect: ${JSON.stringify([...wrong])}\n`);
    return {
      runs: runs.length,
      correct,
      notDone: ids.filter((id) => !done.get(id)?.done).length,
      sandboxIds: runs.flatMap((run) => (run.op ? [run.op.sandbox_id] : [])),
    };
  }),
);

rows.push(
  await scenario(`${COUNTS.bodies.toLocaleString('en')} random request bodies`, async () => {
    const wellFormed = fc.record(
      {
        template: fc.oneof(fc.constant('base'), fc.string()),
        resources: fc.record(
          {
            cpu: fc.oneof(fc.integer({ min: -2, max: 70 }), fc.double(), fc.string()),
            memory_mib: fc.oneof(fc.integer({ min: -1, max: 300_000 }), fc.constant(null)),
            disk_mib: fc.oneof(fc.integer({ min: -1, max: 2_000_000 }), fc.boolean()),
          },
          { requiredKeys: [] },
        ),
        extra: fc.anything(),
      },
      { requiredKeys: [] },
    );
    const bodies = fc.sample(
      fc.oneof(
        wellFormed.map((value) => JSON.stringify(value)),
        fc.jsonValue().map((value) => JSON.stringify(value)),
        fc.string({ maxLength: 200 }),
        fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes).toString('latin1')),
      ),
      { numRuns: COUNTS.bodies, seed: 20_261_130 },
    );
    let correct = 0;
    const accepted: Operation[] = [];
    for (let i = 0; i < bodies.length; i += 25) {
      const answers = await Promise.all(
        bodies.slice(i, i + 25).map((body) => call('POST', '/v1/sandboxes', body)),
      );
      for (const { status, json } of answers) {
        const code = (json.error as { code?: string } | undefined)?.code;
        if (status === 202) accepted.push(json as unknown as Operation);
        if (status === 202 || (status === 400 && code === 'invalid_request')) correct += 1;
      }
    }
    const done = await settle(accepted.map((op) => op.id));
    return {
      runs: bodies.length,
      correct,
      notDone: accepted.filter((op) => !done.get(op.id)?.done).length,
      sandboxIds: accepted.map((op) => op.sandbox_id),
    };
  }),
);

// --- report -------------------------------------------------------------------------------

keepWorker = false;
worker?.kill('SIGTERM');
await new Promise((resolve) =>
  worker?.exitCode !== null ? resolve(undefined) : worker.once('exit', resolve),
);
server.closeAllConnections();
server.close();
await connection.close();
await store.close();
await cluster.close();
await devServer.stop();
rmSync(dataDir, { recursive: true, force: true });

const table = rows.filter((row): row is FaultRow => row !== undefined);
console.log(renderFaultTable(table));
const perfect = table.every(isPerfect);
if (!perfect) {
  console.log(
    '\nnot every figure is as it should be; the worker last printed:\n' + workerOutput.slice(-2000),
  );
}
process.exit(perfect ? 0 : 1);
