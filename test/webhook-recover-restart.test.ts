/**
 * No event lost to the allow-list (docs/webhooks.md, "What is kept, and recover"), over `npm
 * start`'s stack restarted twice on one DATA_DIR: an endpoint on loopback is registered while
 * WEBHOOK_ALLOWED_CIDRS allows it; the stack restarts without the allowance, and the events of
 * that time are refused at delivery and kept; it restarts again with loopback allowed, and two
 * recovers at once deliver every refused event exactly once, signed, with nothing lost.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook } from 'standardwebhooks';
import { afterAll, expect, it } from 'vitest';
import { waitUntil } from '../tools/wait-until.js';
import { startStackProcess, type StackProcess } from './support/stack-process.js';
import { Receiver } from './support/webhook-receiver.js';

const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-webhook-recover-'));
const started: StackProcess[] = [];
const receiver = new Receiver();
afterAll(async () => {
  for (const stack of started) await stack.interrupt();
  await receiver.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

const auth = { authorization: 'Bearer dev-token', 'content-type': 'application/json' };

async function call(
  stack: StackProcess,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${stack.apiUrl}${path}`, {
    method,
    headers: auth,
    ...(body !== undefined && { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return {
    status: response.status,
    body: text ? (JSON.parse(text) as Record<string, unknown>) : {},
  };
}

async function start(env: Record<string, string>): Promise<StackProcess> {
  const stack = await startStackProcess({ DATA_DIR: dataDir, ...env });
  started.push(stack);
  return stack;
}

/** Creates a sandbox and waits until it runs; deletes it and waits when `remove`. */
async function sandbox(stack: StackProcess, remove: boolean): Promise<string> {
  const created = await call(stack, 'POST', '/v1/sandboxes', {
    template: 'base',
    resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(202);
  const op = created.body as { id: string; sandbox_id: string };
  await waitUntil(
    async () => {
      const got = await call(stack, 'GET', `/v1/operations/${op.id}`);
      return got.body.status === 'succeeded' ? got : undefined;
    },
    { timeoutMs: 60_000, what: `create ${op.id} succeeded` },
  );
  if (remove) {
    const deleted = await call(stack, 'DELETE', `/v1/sandboxes/${op.sandbox_id}`);
    expect(deleted.status).toBe(202);
    const deleteOp = deleted.body as { id: string };
    await waitUntil(
      async () => {
        const got = await call(stack, 'GET', `/v1/operations/${deleteOp.id}`);
        return got.body.done === true ? got : undefined;
      },
      { timeoutMs: 60_000, what: `delete ${deleteOp.id} done` },
    );
  }
  return op.sandbox_id;
}

it('delivers every event refused while loopback was not allowed exactly once after a restart that allows it and a recover', async () => {
  await receiver.start();
  const url = receiver.url();

  // 1. Loopback allowed: the endpoint registers.
  const first = await start({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
  const registered = await call(first, 'POST', '/v1/webhook-endpoints', {
    url,
    event_types: ['sandbox.running', 'sandbox.deleted'],
  });
  expect(registered.status, JSON.stringify(registered.body)).toBe(201);
  const endpoint = registered.body as { id: string; secret: string };
  expect(await first.interrupt()).toBe(0);

  // 2. Loopback no longer allowed: registering it again is refused, and the events are refused
  // at delivery, kept.
  const second = await start({});
  const refusedRegistration = await call(second, 'POST', '/v1/webhook-endpoints', {
    url,
    event_types: ['sandbox.running'],
  });
  expect(refusedRegistration.status).toBe(400);
  expect(JSON.stringify(refusedRegistration.body)).toContain('127.0.0.1 (loopback)');
  const since = new Date().toISOString();
  const kept = await sandbox(second, true);
  const running = await sandbox(second, false);
  const deliveriesOf = async (stack: StackProcess) =>
    (await call(stack, 'GET', `/v1/webhook-endpoints/${endpoint.id}/deliveries`)).body
      .deliveries as Array<{ event_id: string; status: string; error: string | null }>;
  const refused = await waitUntil(
    async () => {
      const rows = await deliveriesOf(second);
      return rows.length >= 3 ? rows : undefined;
    },
    { timeoutMs: 60_000, what: 'three refused deliveries' },
  );
  expect(refused.map((row) => row.status)).toEqual(['refused', 'refused', 'refused']);
  expect(refused[0]!.error).toContain('the event is kept');
  const eventIds = new Set(refused.map((row) => row.event_id));
  expect(eventIds.size).toBe(3);
  expect(receiver.received).toEqual([]);
  expect(await second.interrupt()).toBe(0);

  // 3. Loopback allowed again: two recovers at once; each event arrives once.
  const third = await start({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.1/32' });
  const recovers = await Promise.all([
    call(third, 'POST', `/v1/webhook-endpoints/${endpoint.id}:recover`, { since }),
    call(third, 'POST', `/v1/webhook-endpoints/${endpoint.id}:recover`, { since }),
  ]);
  for (const answer of recovers) {
    expect(answer.status, JSON.stringify(answer.body)).toBe(202);
  }
  const queued = recovers.map((answer) => answer.body.queued as number);
  // Each event queued by at least one of them (a later one supersedes an earlier queueing).
  expect(Math.max(...queued)).toBeGreaterThanOrEqual(1);
  expect(queued[0]! + queued[1]!).toBeGreaterThanOrEqual(3);
  await waitUntil(async () => (receiver.received.length >= 3 ? true : undefined), {
    timeoutMs: 60_000,
    what: 'the three recovered events at the receiver',
  });
  // A sleep: that no event comes twice is what is proved.
  await new Promise((resolve) => setTimeout(resolve, 3_000));
  const got = receiver.received;
  expect(got.map((r) => r.headers['webhook-id']).sort()).toEqual([...eventIds].sort());
  for (const delivery of got) new Webhook(endpoint.secret).verify(delivery.body, delivery.headers);
  // Each sandbox's events, once each (two recovers at once promise no order between them).
  expect(
    receiver
      .forSandbox(kept)
      .map((r) => r.json.type)
      .sort(),
  ).toEqual(['sandbox.deleted', 'sandbox.running']);
  expect(receiver.forSandbox(running).map((r) => r.json.type)).toEqual(['sandbox.running']);
  const after = await deliveriesOf(third);
  expect(after.filter((row) => row.status === 'succeeded')).toHaveLength(3);
  // Nothing is left to send: a third recover queues nothing.
  const again = await call(third, 'POST', `/v1/webhook-endpoints/${endpoint.id}:recover`, {
    since,
  });
  expect(again).toMatchObject({ status: 202, body: { queued: 0 } });
}, 600_000);
