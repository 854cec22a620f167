/**
 * Sandbox lifetimes (docs/api.md, "Lifetimes"): a create's `ttl` and its template's
 * `default_ttl` / `max_ttl`, the `:extend` custom method, and the expiry that deletes the sandbox
 * through the `deleteSandbox` workflow (pod deleted by uid, operation cause `expired`), against
 * the dev server and the simulated cluster.
 */
import request from 'supertest';
import { Client, Connection, WorkflowNotFoundError } from '@temporalio/client';
import { MockActivityEnvironment } from '@temporalio/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lifetimeWorkflowId } from '../contract/index.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';
import { storeActivities } from '../src/activities/store.js';
import { startGrpcCounter } from './support/grpc-counter.js';

const TEMPLATES = {
  base: { image: 'ghcr.io/durable-sandbox/base:1' },
  leased: { image: 'ghcr.io/durable-sandbox/base:1', default_ttl: '3s', max_ttl: '600s' },
};

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({
    env: { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) },
    stack: {
      cluster: { startupDelayMs: 50, rootfsMib: { base: 451, leased: 451 } },
      learnRootfsFloors: false,
    },
  });
});
afterAll(async () => {
  await api?.stop();
});

interface SandboxBody {
  id: string;
  state: string;
  expire_time: string | null;
  pod: { name: string | null; uid: string | null };
}

/** Creates a sandbox and waits until it runs. */
async function running(extra: Record<string, unknown>): Promise<SandboxBody> {
  const created = await acceptedCreate(api.app, api.tenantA, createBody(2048, extra));
  const done = await awaitOperation(api.app, api.tenantA, created.id);
  expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
  return getSandbox(created.sandbox_id);
}

async function getSandbox(id: string): Promise<SandboxBody> {
  const response = await request(api.app).get(`/v1/sandboxes/${id}`).set(bearer(api.tenantA));
  expect(response.status, response.text).toBe(200);
  return response.body as SandboxBody;
}

function extend(id: string, body: Record<string, unknown>) {
  return request(api.app).post(`/v1/sandboxes/${id}:extend`).set(bearer(api.tenantA)).send(body);
}

/** The tenant's delete operations of a sandbox. */
async function deletesOf(sandboxId: string): Promise<OperationBody[]> {
  const response = await request(api.app).get('/v1/operations').set(bearer(api.tenantA));
  expect(response.status).toBe(200);
  return (response.body.operations as Array<OperationBody & { cause: string | null }>).filter(
    (op) => op.sandbox_id === sandboxId && op.type === 'sandbox.delete',
  );
}

/**
 * Runs the delete's last step (`markSandboxDeleted`) again for a sandbox's delete operation, its
 * Temporal client counted by a gRPC proxy: @returns the lifetime cancels it sent (what reached
 * the server).
 */
async function lifetimeCancelsOfMarkDeleted(sandboxId: string, operationId: string) {
  const counter = await startGrpcCounter(api.stack.temporal.address);
  const connection = await Connection.connect({ address: counter.address });
  try {
    const env = new MockActivityEnvironment(
      {},
      { client: new Client({ connection, namespace: 'default' }) },
    );
    const { markSandboxDeleted } = storeActivities({ store: api.stack.store });
    await env.run(markSandboxDeleted, { operationId, sandboxId });
    return counter.count('RequestCancelWorkflowExecution');
  } finally {
    await connection.close();
    await counter.close();
  }
}

async function lifetimeStatus(sandboxId: string): Promise<string | undefined> {
  try {
    const handle = api.stack.temporal.client.workflow.getHandle(lifetimeWorkflowId(sandboxId));
    return (await handle.describe()).status.name;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

describe('a create with a lifetime', () => {
  it('answers 400 naming max_ttl for a ttl above the template maximum, before anything starts', async () => {
    const response = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048, { template: 'leased', ttl: '601s' }));
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect(response.body.error.message).toMatch(/^ttl must be at most 600s \(max_ttl/);
  });

  it('answers 400 for a ttl that is not a duration', async () => {
    const response = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048, { ttl: '1h' }));
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.message).toMatch(/^ttl must be a duration such as "3600s"/);
  });

  it('has no expiry without a ttl or a template default, and no lifetime workflow', async () => {
    const sandbox = await running({});
    expect(sandbox.state).toBe('running');
    expect(sandbox.expire_time).toBeNull();
    expect(await lifetimeStatus(sandbox.id)).toBeUndefined();
  });

  it('expires at running + ttl, counted from running', async () => {
    const sandbox = await running({ ttl: '300s' });
    const record = await api.stack.store.getSandboxById(sandbox.id);
    expect(record?.runningAt).not.toBeNull();
    expect(Date.parse(sandbox.expire_time ?? '')).toBe(
      Date.parse(record?.runningAt ?? '') + 300_000,
    );
    expect(await lifetimeStatus(sandbox.id)).toBe('RUNNING');
  });
});

describe('expiry', () => {
  it("deletes the sandbox at its template's default lifetime: pod deleted by uid, operation cause expired", async () => {
    const sandbox = await running({ template: 'leased' });
    expect(sandbox.expire_time).not.toBeNull();
    const expireAtMs = Date.parse(sandbox.expire_time ?? '');
    await waitUntil(async () => (await getSandbox(sandbox.id)).state === 'deleted', {
      timeoutMs: 30_000,
    });
    const [expiry] = await deletesOf(sandbox.id);
    expect(expiry).toMatchObject({ type: 'sandbox.delete', cause: 'expired' });
    const done = await awaitOperation(api.app, api.tenantA, expiry?.id ?? '');
    expect(done.status).toBe('succeeded');
    // Not before its time.
    expect(Date.parse(done.created_at)).toBeGreaterThanOrEqual(expireAtMs);
    const podDeletes = api.stack.cluster.requestsWhere({
      verb: 'delete',
      resource: 'pods',
      name: sandbox.pod.name as string,
    });
    expect(podDeletes.map((r) => r.deleteOptions)).toContainEqual(
      expect.objectContaining({ preconditions: { uid: sandbox.pod.uid } }),
    );
    expect(await lifetimeStatus(sandbox.id)).toBe('COMPLETED');
    // The lifetime started this delete and ended by itself: the delete's last step sends it no
    // cancel (a caller's delete does: below).
    expect(await lifetimeCancelsOfMarkDeleted(sandbox.id, expiry?.id ?? '')).toBe(0);
  });

  it('still fires after the worker was stopped past expire_time and started again', async () => {
    const sandbox = await running({ ttl: '2s' });
    await api.stack.worker?.shutdown();
    // A sleep: the clock must pass expire_time while no worker runs. Nothing in Temporal shows
    // it: the lifetime's timer may not even be started (its first workflow task needs a worker).
    const expireAtMs = Date.parse(sandbox.expire_time ?? '');
    await new Promise((resolve) =>
      setTimeout(resolve, Math.max(0, expireAtMs - Date.now()) + 1_000),
    );
    // No worker: the timer fired in Temporal, but nothing could delete yet.
    expect((await getSandbox(sandbox.id)).state).toBe('running');
    await api.stack.startWorker();
    await waitUntil(async () => (await getSandbox(sandbox.id)).state === 'deleted', {
      timeoutMs: 30_000,
    });
    expect((await deletesOf(sandbox.id)).map((op) => (op as { cause?: string }).cause)).toEqual([
      'expired',
    ]);
  });
});

describe('extend', () => {
  it('moves expire_time, bounded by max_ttl from running; the same expire_time twice is one change', async () => {
    const sandbox = await running({ template: 'leased' });
    const target = new Date(Date.now() + 120_000).toISOString();
    const first = await extend(sandbox.id, { expire_time: target });
    expect(first.status, first.text).toBe(200);
    expect(first.body.expire_time).toBe(target);
    const again = await extend(sandbox.id, { expire_time: target });
    expect(again.status).toBe(200);
    expect(again.body.expire_time).toBe(target);
    // Past the old expiry (3 s), it still runs.
    // A sleep: nothing happening is what is proved, so time must pass past the old expiry.
    await new Promise((resolve) => setTimeout(resolve, 4_000));
    expect((await getSandbox(sandbox.id)).state).toBe('running');
    expect(await deletesOf(sandbox.id)).toEqual([]);
    const beyond = await extend(sandbox.id, { ttl: '700s' });
    expect(beyond.status, beyond.text).toBe(400);
    expect(beyond.body.error.message).toMatch(/max_ttl 600s of template leased/);
    const both = await extend(sandbox.id, { ttl: '10s', expire_time: target });
    expect(both.status).toBe(400);
  });

  it('answers 409 not_running for a sandbox that does not run', async () => {
    const sandbox = await running({});
    const deleted = await request(api.app)
      .delete(`/v1/sandboxes/${sandbox.id}`)
      .set(bearer(api.tenantA));
    await awaitOperation(api.app, api.tenantA, deleted.body.id as string);
    const response = await extend(sandbox.id, { ttl: '60s' });
    expect(response.status, response.text).toBe(409);
    expect(response.body.error.code).toBe('not_running');
  });

  it('gives a sandbox without an expiry one, and its lifetime deletes it', async () => {
    const sandbox = await running({});
    const response = await extend(sandbox.id, { ttl: '1s' });
    expect(response.status, response.text).toBe(200);
    await waitUntil(async () => (await getSandbox(sandbox.id)).state === 'deleted', {
      timeoutMs: 30_000,
    });
  });
});

describe('a sandbox deleted before its expiry', () => {
  it('leaves no timer: its lifetime workflow is cancelled and no expiry operation ever appears', async () => {
    const sandbox = await running({ ttl: '300s' });
    expect(await lifetimeStatus(sandbox.id)).toBe('RUNNING');
    const deleted = await request(api.app)
      .delete(`/v1/sandboxes/${sandbox.id}`)
      .set(bearer(api.tenantA));
    const done = await awaitOperation(api.app, api.tenantA, deleted.body.id as string);
    expect(done.status).toBe('succeeded');
    expect((done as OperationBody & { cause?: string }).cause).toBe('requested');
    await waitUntil(async () => (await lifetimeStatus(sandbox.id)) === 'CANCELLED', {
      timeoutMs: 30_000,
    });
    expect((await deletesOf(sandbox.id)).length).toBe(1);
    expect(await lifetimeCancelsOfMarkDeleted(sandbox.id, deleted.body.id as string)).toBe(1);
  });
});
