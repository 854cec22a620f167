/**
 * Records the replay fixtures of the release before (test/replay.test.ts): checks out the commit
 * of RELEASE_BEFORE (tools/release-before.ts), runs that checkout's own embedded stack
 * (`tools/start.ts`: its API, worker, dev server and simulated cluster, all the old code),
 * drives one create down every branch of the create workflow over its HTTP API, and writes the
 * history of every create and delete branch and of the workflows that may run for days
 * (`RECORDED_HISTORIES`) to `test/fixtures/<commit, 7 hex>/<name>.history.json`.
 *
 *     npx tsx tools/record-histories.ts            # the commit of RELEASE_BEFORE
 *     RELEASE_BEFORE=<commit> npx tsx tools/record-histories.ts
 *
 * Two stacks run one after the other: one whose node answers at once (running, refused; a
 * create with labels and a lifetime, one claiming from a warm pool, one under a re-placement
 * policy, a delete of a running sandbox; a lifetime that expired; the lifetime and warm-pool
 * workflows still open) and
 * one whose node never answers within the test (SIMULATED_NODE_DELAY_MS=600000), for the
 * branches that end while the create waits for its IP (cancelled, deadline, pod failed,
 * deleted, with that delete's own workflow).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { lifetimeWorkflowId } from '../contract/index.js';
import { freePort } from '../src/process/free-port.js';
import { createKubernetesClient } from '../src/kubernetes/client.js';
import {
  checkoutRelease,
  fixtureDir,
  pathInCheckout,
  releaseBeforeCommit,
} from './release-before.js';

const TOKEN = 'dev-token';
const AUTH = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
const ADMIN_TOKEN = 'recorder-admin-token';
const RESOURCES = { cpu: 1, memory_mib: 256, disk_mib: 2048 };
const BODY = (diskMib: number, more: Record<string, unknown> = {}) =>
  JSON.stringify({ template: 'base', resources: { ...RESOURCES, disk_mib: diskMib }, ...more });

/**
 * The fast stack's catalog: `base` as by default, `pooled` with a warm pool of one pod of
 * RESOURCES (a create asking for exactly them claims it), `placed` with a re-placement policy.
 */
const TEMPLATES = {
  base: { image: 'ghcr.io/durable-sandbox/base:1' },
  pooled: { image: 'ghcr.io/durable-sandbox/base:1', warm_pool: { size: 1, resources: RESOURCES } },
  placed: { image: 'ghcr.io/durable-sandbox/base:1', replace_on: ['ResourceExhausted'] },
};

interface OldStack {
  api: string;
  client: Client;
  dataDir: string;
  stop(): Promise<void>;
}

/** Starts the old checkout's `tools/start.ts` on free ports and a fresh DATA_DIR. */
async function startOldStack(cwd: string, env: Record<string, string>): Promise<OldStack> {
  const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-record-'));
  const port = await freePort();
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', pathInCheckout(cwd, 'tools/start.ts')],
    {
      cwd,
      env: {
        ...process.env,
        PORT: String(port),
        METRICS_PORT: String(await freePort()),
        DATA_DIR: dataDir,
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'warn',
        ADMIN_TOKENS: `recorder:${ADMIN_TOKEN}`,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise((resolve) => child.once('exit', resolve));
  const deadline = Date.now() + 300_000;
  while (!output.includes('durable-sandbox is running')) {
    if (child.exitCode !== null || Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`the old stack did not start:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const address = /Temporal: +([\d.]+:\d+),/.exec(output)?.[1];
  if (!address) throw new Error(`no Temporal address in the banner:\n${output}`);
  const connection = await Connection.connect({ address });
  return {
    api: `http://127.0.0.1:${port}`,
    client: new Client({ connection }),
    dataDir,
    async stop() {
      await connection.close();
      child.kill('SIGINT');
      await exited;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

interface Operation {
  id: string;
  sandbox_id: string;
  phase: string;
  done: boolean;
}

async function call(stack: OldStack, method: string, path: string, body?: string) {
  const headers = path.startsWith('/admin/')
    ? { ...AUTH, Authorization: `Bearer ${ADMIN_TOKEN}` }
    : AUTH;
  const response = await fetch(`${stack.api}${path}`, { method, headers, body });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

async function awaitOperation(stack: OldStack, id: string, until: (op: Operation) => boolean) {
  const deadline = Date.now() + 180_000;
  for (;;) {
    const { body } = await call(stack, 'GET', `/v1/operations/${id}?wait=5s`);
    const operation = body as unknown as Operation;
    if (until(operation)) return operation;
    if (Date.now() > deadline) throw new Error(`operation ${id}: ${JSON.stringify(body)}`);
  }
}

async function created(
  stack: OldStack,
  diskMib: number,
  more?: Record<string, unknown>,
): Promise<Operation> {
  const { status, body } = await call(stack, 'POST', '/v1/sandboxes', BODY(diskMib, more));
  if (status !== 202) throw new Error(`create answered ${status}: ${JSON.stringify(body)}`);
  return body as unknown as Operation;
}

const waiting = (op: Operation) => op.phase === 'waiting_for_ip';
const isDone = (op: Operation) => op.done;

async function deleted(stack: OldStack, sandboxId: string): Promise<Operation> {
  const { status, body } = await call(stack, 'DELETE', `/v1/sandboxes/${sandboxId}`);
  if (status !== 202) throw new Error(`delete answered ${status}: ${JSON.stringify(body)}`);
  return body as unknown as Operation;
}

/** The id of the one open workflow of `type` on the stack's dev server. */
async function openWorkflowOf(stack: OldStack, type: string): Promise<string> {
  const query = `WorkflowType = '${type}' AND ExecutionStatus = 'Running'`;
  const deadline = Date.now() + 60_000;
  for (;;) {
    for await (const workflow of stack.client.workflow.list({ query })) return workflow.workflowId;
    if (Date.now() > deadline) throw new Error(`no open ${type} workflow`);
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
}

/**
 * The histories a recording drives on `stack`, by fixture name; each workflow id's history is
 * fetched after the recording returns: a closed workflow's whole, an open one's so far.
 */
type Recording = (stack: OldStack) => Promise<Array<[name: string, workflowId: string]>>;

/** The histories recorded while their workflow runs (for days, in production). */
const STILL_OPEN = new Set(['sandbox-lifetime-waiting', 'warm-pool-reconciling']);

const fastNode: Recording = async (stack) => {
  const running = await created(stack, 2048);
  await awaitOperation(stack, running.id, isDone);
  const refused = await created(stack, 300);
  await awaitOperation(stack, refused.id, isDone);
  // Labels and a lifetime: the result repeats them, and the lifetime's timer starts.
  const labelled = await created(stack, 2048, { labels: { team: 'replay' }, ttl: '86400s' });
  await awaitOperation(stack, labelled.id, isDone);
  const lifetime = await openWorkflowOf(stack, 'sandboxLifetime');
  // A lifetime whose timer fires: its expiry step deletes the sandbox (cause `expired`).
  const expiring = await created(stack, 2048, { ttl: '2s' });
  await awaitOperation(stack, expiring.id, isDone);
  // A claim from the warm pool once it holds a ready pod.
  const deadline = Date.now() + 120_000;
  const ready = async () =>
    ((await call(stack, 'GET', '/admin/v1/warm-pools/pooled')).body.status as { ready: number })
      .ready;
  while ((await ready()) < 1) {
    if (Date.now() > deadline) throw new Error('the warm pool never held a ready pod');
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  const claimed = await created(stack, 2048, { template: 'pooled' });
  await awaitOperation(stack, claimed.id, isDone);
  const warmPool = await openWorkflowOf(stack, 'warmPool');
  const placed = await created(stack, 2048, { template: 'placed' });
  await awaitOperation(stack, placed.id, isDone);
  const deletion = await deleted(stack, running.sandbox_id);
  await awaitOperation(stack, deletion.id, isDone);
  return [
    ['create-sandbox-running', running.id],
    ['create-sandbox-invalid-request', refused.id],
    ['create-sandbox-labels-ttl', labelled.id],
    ['sandbox-lifetime-waiting', lifetime],
    ['sandbox-lifetime-expired', lifetimeWorkflowId(expiring.sandbox_id)],
    ['create-sandbox-warm-claim', claimed.id],
    ['warm-pool-reconciling', warmPool],
    ['create-sandbox-re-placement', placed.id],
    ['delete-sandbox-running', deletion.id],
  ];
};

const silentNode: Recording = async (stack) => {
  const cancelled = await created(stack, 2048);
  await awaitOperation(stack, cancelled.id, waiting);
  await call(stack, 'POST', `/v1/operations/${cancelled.id}/cancel`);
  await awaitOperation(stack, cancelled.id, isDone);

  // The synchronous route's budget (SYNC_READINESS_BUDGET_MS) is its create's deadline.
  const sync = await fetch(`${stack.api}/sync/v1/sandboxes`, {
    method: 'POST',
    headers: AUTH,
    body: BODY(2048),
  });
  const deadlineId = sync.headers.get('operation-id') ?? '';
  if (sync.status !== 503) throw new Error(`the sync create answered ${sync.status}`);
  await awaitOperation(stack, deadlineId, isDone);

  // The pod is deleted behind the service's back while it waits: pod_failed.
  const podFailed = await created(stack, 2048);
  await awaitOperation(stack, podFailed.id, waiting);
  const kubernetes = createKubernetesClient({
    kubeconfigPath: join(stack.dataDir, 'kubeconfig'),
    namespace: 'sandboxes',
  });
  const sandbox = (await call(stack, 'GET', `/v1/sandboxes/${podFailed.sandbox_id}`)).body;
  const podName = (sandbox.pod as { name: string }).name;
  await kubernetes.core.deleteNamespacedPod({ name: podName, namespace: 'sandboxes' });
  await awaitOperation(stack, podFailed.id, isDone);

  // DELETE /v1/sandboxes/{id} while the create waits cancels the create.
  const whileCreating = await created(stack, 2048);
  await awaitOperation(stack, whileCreating.id, waiting);
  const deletion = await deleted(stack, whileCreating.sandbox_id);
  await awaitOperation(stack, whileCreating.id, isDone);
  await awaitOperation(stack, deletion.id, isDone);
  return [
    ['create-sandbox-cancelled', cancelled.id],
    ['create-sandbox-deadline', deadlineId],
    ['create-sandbox-pod-failed', podFailed.id],
    ['create-sandbox-deleted-while-creating', whileCreating.id],
    ['delete-sandbox-while-creating', deletion.id],
  ];
};

async function record(
  cwd: string,
  env: Record<string, string>,
  run: Recording,
  into: string,
): Promise<void> {
  const stack = await startOldStack(cwd, env);
  try {
    for (const [name, id] of await run(stack)) {
      const handle = stack.client.workflow.getHandle(id);
      if (!STILL_OPEN.has(name)) await handle.result().catch(() => undefined);
      const file = join(into, `${name}.history.json`);
      writeFileSync(file, historyToJSON(await handle.fetchHistory()));
      console.log(`recorded ${file}`);
    }
  } finally {
    await stack.stop();
  }
}

async function main(): Promise<void> {
  const commit = releaseBeforeCommit();
  const release = checkoutRelease(commit);
  const into = fixtureDir(commit);
  mkdirSync(into, { recursive: true });
  console.log(`recording the histories of ${commit} (node_modules ${release.nodeModules})`);
  try {
    await record(release.dir, { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) }, fastNode, into);
    await record(
      release.dir,
      { SIMULATED_NODE_DELAY_MS: '600000', SYNC_READINESS_BUDGET_MS: '3000' },
      silentNode,
      into,
    );
  } finally {
    release.remove();
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
