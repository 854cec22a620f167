/**
 * The embedded stack across a restart (README "Quick start"): DATA_DIR is claimed by one
 * `npm start` at a time, an API port in use stops it before anything starts, a create that was
 * waiting when the stack stopped ends as `pod_failed` after the restart (the simulated cluster
 * starts empty), not at its deadline, and a sandbox that was running is listed as `lost`.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { clusterResetReason, explainPodsOfBefore } from '../tools/cluster-reset.js';
import { openStore } from '../src/store/index.js';
import { startStackProcess, type StackProcess } from './support/stack-process.js';
import { waitUntil } from '../tools/wait-until.js';

const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-restart-'));
const started: StackProcess[] = [];
afterAll(async () => {
  for (const stack of started) await stack.interrupt();
  rmSync(dataDir, { recursive: true, force: true });
});

interface Operation {
  id: string;
  status: string;
  phase: string;
  done: boolean;
  error: { code: string; message: string } | null;
}

async function operation(apiUrl: string, id: string): Promise<Operation> {
  const response = await fetch(`${apiUrl}/v1/operations/${id}`, {
    headers: { authorization: 'Bearer dev-token' },
  });
  return (await response.json()) as Operation;
}

it('ends a create that was waiting when the stack stopped as pod_failed after a restart', async () => {
  // The node never answers in time: the create waits for its IP.
  const first = await startStackProcess({ DATA_DIR: dataDir, SIMULATED_NODE_DELAY_MS: '600000' });
  started.push(first);
  const created = await fetch(`${first.apiUrl}/v1/sandboxes`, {
    method: 'POST',
    headers: { authorization: 'Bearer dev-token', 'content-type': 'application/json' },
    body: JSON.stringify({
      template: 'base',
      resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
    }),
  });
  expect(created.status).toBe(202);
  const { id } = (await created.json()) as Operation;
  await waitUntil(async () => (await operation(first.apiUrl, id)).phase === 'waiting_for_ip');

  // A second stack on the same DATA_DIR is refused while the first runs.
  const second = await startStackProcess({ DATA_DIR: dataDir }, false);
  expect(await second.exited).toBe(1);
  expect(second.output()).toContain('is in use by another npm start');
  // So is one on another DATA_DIR but the same API port: it must not claim to be running.
  const otherDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-restart-other-'));
  const samePort = await startStackProcess(
    { DATA_DIR: otherDir, PORT: new URL(first.apiUrl).port },
    false,
  );
  expect(await samePort.exited).toBe(1);
  expect(samePort.output()).toMatch(/PORT: \d+ is in use .* e\.g\. PORT=\d+ npm start/);
  expect(samePort.output()).not.toContain('durable-sandbox is running');
  // It stopped before starting the Temporal dev server (whose database lives in DATA_DIR).
  expect(existsSync(join(otherDir, 'temporal.db'))).toBe(false);
  rmSync(otherDir, { recursive: true, force: true });

  expect(await first.interrupt()).toBe(0);
  const third = await startStackProcess({ DATA_DIR: dataDir });
  started.push(third);
  let current: Operation | undefined;
  await waitUntil(async () => (current = await operation(third.apiUrl, id)).done, {
    timeoutMs: 90_000,
  });
  expect(current).toMatchObject({
    status: 'failed',
    error: { code: 'pod_failed', message: expect.stringContaining('no longer exists') },
  });
  // It says what happened: the simulated cluster restarted empty; nothing deleted the pod.
  expect(current?.error?.message).toMatch(
    /^pod \S+ no longer exists; the embedded stack restarted with an empty simulated cluster \(nothing deleted it\)$/,
  );

  // A sandbox running when the stack stops has no pod after the restart: it is listed as lost.
  const running = await fetch(`${third.apiUrl}/v1/sandboxes`, {
    method: 'POST',
    headers: { authorization: 'Bearer dev-token', 'content-type': 'application/json' },
    body: JSON.stringify({
      template: 'base',
      resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
    }),
  });
  const runningOp = (await running.json()) as Operation & { sandbox_id: string };
  await waitUntil(async () => (current = await operation(third.apiUrl, runningOp.id)).done, {
    timeoutMs: 60_000,
  });
  expect(current?.status).toBe('succeeded');
  expect(await third.interrupt()).toBe(0);
  const fourth = await startStackProcess({ DATA_DIR: dataDir });
  started.push(fourth);
  expect(fourth.output()).toContain('lost their pods and are now lost');
  // Every CLI command the banner suggests reaches this stack's API (its PORT is not 8080).
  const prefix = `DURABLE_SANDBOX_URL=${fourth.apiUrl} `;
  expect(fourth.output()).toContain(`list: ${prefix}npx durable-sandbox list --state lost`);
  const commands = [...fourth.output().matchAll(/(\S+ )?(npx durable-sandbox|npm run cli)\b/g)];
  expect(commands.length).toBeGreaterThan(0);
  expect(commands.filter((match) => match[1] !== prefix).map((match) => match[0])).toEqual([]);
  const auth = { authorization: 'Bearer dev-token' };
  const sandbox = (await (
    await fetch(`${fourth.apiUrl}/v1/sandboxes/${runningOp.sandbox_id}`, { headers: auth })
  ).json()) as { state: string; failure: { code: string; message: string } | null };
  expect(sandbox).toMatchObject({
    state: 'lost',
    failure: { code: 'pod_lost', message: expect.stringContaining('restarted') },
  });
  const listed = (await (
    await fetch(`${fourth.apiUrl}/v1/sandboxes?state=running`, { headers: auth })
  ).json()) as { sandboxes: Array<{ id: string }> };
  expect(listed.sandboxes.map((s) => s.id)).not.toContain(runningOp.sandbox_id);
}, 300_000);

it('blames the restart only for the pods of creates waiting before it; a pod made after says deleted', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-restart-store-'));
  const store = await openStore({ sqliteFile: join(dir, 'store.db') });
  try {
    const create = async (n: number) => {
      const ids = { id: `sbx_reset${n}`, operationId: `op_reset${n}` };
      await store.createSandbox({
        ...ids,
        tenant: 'dev',
        template: 'base',
        resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
      });
      const ref = { sandboxId: ids.id, generation: 1, attempt: 1 };
      await store.recordPod({ ...ref, podName: `sbx-reset${n}-g1`, podUid: `uid-${n}` });
    };
    await create(1);
    const reason = clusterResetReason(false);
    const explain = await explainPodsOfBefore(store, reason);
    await create(2); // after the restart
    expect(explain({ name: 'sbx-reset1-g1', uid: 'uid-1' })).toBe(
      'the embedded stack restarted with an empty simulated cluster (nothing deleted it)',
    );
    expect(explain({ name: 'sbx-reset2-g1', uid: 'uid-2' })).toBeUndefined();
    expect(explain({ name: 'sbx-reset1-g1', uid: 'uid-other' })).toBeUndefined();
    expect(clusterResetReason(true)).toBe(
      'the embedded stack restarted with an empty apiserver tier',
    );
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
});
