/**
 * The embedded stack across a restart (README "Quick start"): DATA_DIR is claimed by one
 * `npm start` at a time, and a create that was waiting when the stack stopped ends as
 * `pod_failed` after the restart (the simulated cluster starts empty), not at its deadline.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { startStackProcess, type StackProcess } from './support/stack-process.js';
import { until } from './support/until.js';

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
  await until(async () => (await operation(first.apiUrl, id)).phase === 'waiting_for_ip');

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
  expect(samePort.output()).toContain('PORT');
  expect(samePort.output()).not.toContain('durable-sandbox is running');
  rmSync(otherDir, { recursive: true, force: true });

  expect(await first.interrupt()).toBe(0);
  const third = await startStackProcess({ DATA_DIR: dataDir });
  started.push(third);
  let current: Operation | undefined;
  await until(async () => (current = await operation(third.apiUrl, id)).done, 90_000);
  expect(current).toMatchObject({
    status: 'failed',
    error: { code: 'pod_failed', message: expect.stringContaining('no longer exists') },
  });
}, 300_000);
