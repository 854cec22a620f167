/**
 * Records the replay fixtures of the release before (test/replay.test.ts): checks out the commit
 * of RELEASE_BEFORE (tools/release-before.ts), runs that checkout's own embedded stack
 * (`tools/start.ts`: its API, worker, dev server and simulated cluster, all the old code),
 * drives one create down every branch of the create workflow over its HTTP API, and writes each
 * workflow's history to `test/fixtures/<commit, 7 hex>/create-sandbox-<branch>.history.json`.
 *
 *     npx tsx tools/record-histories.ts            # the commit of RELEASE_BEFORE
 *     RELEASE_BEFORE=<commit> npx tsx tools/record-histories.ts
 *
 * Two stacks run one after the other: one whose node answers at once (running, refused) and one
 * whose node never answers within the test (SIMULATED_NODE_DELAY_MS=600000), for the branches
 * that end while the create waits for its IP (cancelled, deadline, pod failed, deleted).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { historyToJSON } from '@temporalio/common/lib/proto-utils.js';
import { freePort } from '../src/config/free-port.js';
import { createKubernetesClient } from '../src/kubernetes/client.js';
import {
  checkoutRelease,
  fixtureDir,
  pathInCheckout,
  releaseBeforeCommit,
} from './release-before.js';

const TOKEN = 'dev-token';
const AUTH = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' };
const BODY = (diskMib: number) =>
  JSON.stringify({ template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: diskMib } });

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
  const response = await fetch(`${stack.api}${path}`, { method, headers: AUTH, body });
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

async function created(stack: OldStack, diskMib: number): Promise<Operation> {
  const { status, body } = await call(stack, 'POST', '/v1/sandboxes', BODY(diskMib));
  if (status !== 202) throw new Error(`create answered ${status}: ${JSON.stringify(body)}`);
  return body as unknown as Operation;
}

const waiting = (op: Operation) => op.phase === 'waiting_for_ip';
const isDone = (op: Operation) => op.done;

/** One create per branch on `stack`; resolves with branch -> operation id once each is done. */
type Recording = (stack: OldStack) => Promise<Array<[branch: string, operationId: string]>>;

const fastNode: Recording = async (stack) => {
  const running = await created(stack, 2048);
  await awaitOperation(stack, running.id, isDone);
  const refused = await created(stack, 300);
  await awaitOperation(stack, refused.id, isDone);
  return [
    ['running', running.id],
    ['invalid-request', refused.id],
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
  const deleted = await created(stack, 2048);
  await awaitOperation(stack, deleted.id, waiting);
  await call(stack, 'DELETE', `/v1/sandboxes/${deleted.sandbox_id}`);
  await awaitOperation(stack, deleted.id, isDone);
  return [
    ['cancelled', cancelled.id],
    ['deadline', deadlineId],
    ['pod-failed', podFailed.id],
    ['deleted-while-creating', deleted.id],
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
    for (const [branch, id] of await run(stack)) {
      const handle = stack.client.workflow.getHandle(id);
      await handle.result().catch(() => undefined);
      const file = join(into, `create-sandbox-${branch}.history.json`);
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
    await record(release.dir, {}, fastNode, into);
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
