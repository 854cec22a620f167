/**
 * The event feed across a real API restart (docs/webhooks.md, "The event feed"), on SQLite and
 * (with TEST_DATABASE_URL) PostgreSQL: the API runs as its own process (`src/api/main.ts`, as
 * `npm run api`) on the store that the worker (in this process, with the run's dev server and a
 * simulated cluster over HTTP) writes: the same SQLite file, or the same PostgreSQL schema
 * (DATABASE_URL). A caller reads the events of a create, an expiry and a lost pod from a cursor,
 * two a page; the API process is stopped and started again on the same store, and the caller goes
 * on from the cursor it holds. Nothing is missed or repeated: the event ids read across the
 * restart are the feed's ids, in its order.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { freePort } from '../src/process/free-port.js';
import { waitUntil } from '../tools/wait-until.js';
import { sweepOrphanPods } from '../src/worker/orphan-sweeper.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { storeBackends } from './support/store.js';

const TEMPLATES = {
  base: { image: 'ghcr.io/durable-sandbox/base:1' },
  leased: { image: 'ghcr.io/durable-sandbox/base:1', default_ttl: '2s', max_ttl: '600s' },
};

interface ApiProcess {
  child: ChildProcess;
  url: string;
  output: () => string;
  exited: Promise<number | null>;
}

interface EventBody {
  id: string;
  type: string;
  data: { id: string; delete_cause?: string };
}

/**
 * Starts `src/api/main.ts` with `env` on a free port, adds it to `started` (to be stopped after the
 * suite) and waits until it listens.
 */
async function startApi(env: Record<string, string>, started: ApiProcess[]): Promise<ApiProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/api/main.ts'], {
    env: { ...process.env, LOG_FORMAT: 'json', LOG_LEVEL: 'info', ...env, PORT: String(port) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const api: ApiProcess = {
    child,
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    exited: new Promise((resolve) => child.once('exit', resolve)),
  };
  started.push(api);
  await waitUntil(() => output.includes('api listening') || child.exitCode !== null, {
    timeoutMs: 120_000,
    what: 'the API process listening',
  });
  if (child.exitCode !== null) throw new Error(`the API process exited early:\n${output}`);
  return api;
}

/** SIGTERM, then its exit (SIGKILL after 15 s). */
async function stopApi(api: ApiProcess): Promise<void> {
  if (api.child.exitCode !== null || api.child.signalCode !== null) return;
  api.child.kill('SIGTERM');
  const timer = setTimeout(() => api.child.kill('SIGKILL'), 15_000);
  await api.exited;
  clearTimeout(timer);
}

const headers = { Authorization: 'Bearer dev-token', 'Content-Type': 'application/json' };

async function call(api: ApiProcess, method: string, path: string, body?: unknown) {
  const response = await fetch(`${api.url}${path}`, {
    method,
    headers,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  expect(response.status < 300, `${method} ${path}: ${response.status} ${text}`).toBe(true);
  return JSON.parse(text) as Record<string, unknown>;
}

async function page(api: ApiProcess, query: Record<string, string>) {
  const search = new URLSearchParams(query).toString();
  return (await call(api, 'GET', `/v1/events?${search}`)) as unknown as {
    events: EventBody[];
    next_cursor: string;
  };
}

/** Creates a sandbox of `template` and waits until it runs; returns its id. */
async function running(api: ApiProcess, template: string): Promise<string> {
  const created = (await call(api, 'POST', '/v1/sandboxes', {
    template,
    resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
  })) as { id: string; sandbox_id: string };
  await waitUntil(
    async () => {
      const operation = await call(api, 'GET', `/v1/operations/${created.id}?wait=30s`);
      if (operation.done && operation.status !== 'succeeded') {
        throw new Error(`create ${created.id} ended ${JSON.stringify(operation)}`);
      }
      return operation.done ? true : undefined;
    },
    { timeoutMs: 60_000, what: `create ${created.id} succeeded` },
  );
  return created.sandbox_id;
}

describe.each(storeBackends())('the event feed across an API restart on $name', (backend) => {
  const databaseUrl = backend.name === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;
  let stack: TestStack;
  let apiEnv: Record<string, string>;
  const processes: ApiProcess[] = [];

  beforeAll(async () => {
    // The worker gets the API's catalog, as a deployment gives both the same SANDBOX_TEMPLATES.
    const catalog = JSON.stringify(TEMPLATES);
    stack = await startTestStack({
      templates: loadConfig({ SANDBOX_TEMPLATES: catalog }).templates,
      cluster: { startupDelayMs: 50, rootfsMib: { base: 451, leased: 451 } },
      learnRootfsFloors: false,
      databaseUrl,
    });
    const kubeconfig = join(stack.dataDir, 'kubeconfig');
    stack.cluster.writeKubeconfig(kubeconfig);
    apiEnv = {
      TEMPORAL_ADDRESS: stack.temporal.address,
      TEMPORAL_TASK_QUEUE: stack.taskQueue,
      KUBECONFIG: kubeconfig,
      // SQLite: <DATA_DIR>/store.db, the file the stack's worker writes; PostgreSQL: the
      // stack's schema (its URL selects it through search_path).
      DATA_DIR: stack.dataDir,
      ...(stack.storeOptions.databaseUrl && { DATABASE_URL: stack.storeOptions.databaseUrl }),
      ALLOW_DEV_TOKEN: 'true',
      SANDBOX_TEMPLATES: catalog,
    };
  }, 240_000);

  afterAll(async () => {
    for (const api of processes) await stopApi(api);
    await stack?.stop();
  }, 60_000);

  it('reads every event of a create, an expiry and a lost pod from a cursor across an API restart, none missed or repeated', async () => {
    const first = await startApi(apiEnv, processes);
    const start = await page(first, { limit: '2' });
    expect(start.events).toEqual([]);

    const expiring = await running(first, 'leased');
    const losing = await running(first, 'base');
    // Its pod is deleted behind the service's back; the sweep marks the sandbox lost; then the
    // caller deletes it.
    const pod = (await stack.store.getSandboxById(losing))!.pod;
    await stack.kubernetes.core.deleteNamespacedPod({
      name: pod.name!,
      namespace: stack.namespace,
    });
    expect((await sweepOrphanPods({ ...stack, graceMs: 0 })).lost).toEqual([losing]);
    await call(first, 'DELETE', `/v1/sandboxes/${losing}`);

    // Two events on the first process; the caller keeps its cursor.
    const seen: EventBody[] = [];
    const before = await page(first, { after: start.next_cursor, limit: '2' });
    expect(before.events).toHaveLength(2);
    seen.push(...before.events);

    await stopApi(first);
    expect(first.child.exitCode ?? first.child.signalCode, first.output()).not.toBeNull();
    const second = await startApi(apiEnv, processes);

    let cursor = before.next_cursor;
    await waitUntil(
      async () => {
        const next = await page(second, { after: cursor, limit: '2' });
        seen.push(...next.events);
        cursor = next.next_cursor;
        return seen.length >= 5 ? true : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 200, what: 'the five events' },
    );
    expect((await page(second, { after: cursor })).events).toEqual([]);

    // The same ids, in the same order, as the whole feed read at once after the restart.
    const whole = await page(second, { limit: '100' });
    expect(seen.map((event) => event.id)).toEqual(whole.events.map((event) => event.id));
    expect(new Set(seen.map((event) => event.id)).size).toBe(5);
    const of = (sandbox: string) =>
      seen.filter((e) => e.data.id === sandbox).map((e) => [e.type, e.data.delete_cause]);
    expect(of(expiring)).toEqual([
      ['sandbox.running', undefined],
      ['sandbox.deleted', 'expired'],
    ]);
    expect(of(losing)).toEqual([
      ['sandbox.running', undefined],
      ['sandbox.lost', undefined],
      ['sandbox.deleted', 'lost'],
    ]);
  }, 300_000);
});
