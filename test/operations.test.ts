/**
 * Operations as the store keeps them (docs/api.md, "Operations"): the outcome visible the moment it
 * is known (async and sync), operations that outlive their Temporal execution (reads, lists and
 * the Idempotency-Key replay), the long-poll, and a start whose answer was lost.
 * Real dev server, real worker, the simulated cluster over HTTP, a SQLite store.
 */
import type { Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/client';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { longPollsHeld, MAX_WAIT_MS, parseWait } from '../src/api/long-poll.js';
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

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({
    stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false },
  });
});
afterAll(async () => {
  await api?.stop();
});

/** DELETEs of pods the simulated apiserver has answered, by status. */
function podDeletes(status?: number) {
  return api.stack.cluster.requestsWhere({
    verb: 'delete',
    resource: 'pods',
    namespace: 'sandboxes',
    status,
  }).length;
}

async function getOperation(id: string, query = '') {
  return request(api.app).get(`/v1/operations/${id}${query}`).set(bearer(api.tenantA));
}

/** Deletes the workflow execution from Temporal (as retention would) and waits until it is gone. */
async function deleteExecution(client: Client, workflowId: string): Promise<void> {
  await client.workflowService.deleteWorkflowExecution({
    namespace: client.options.namespace,
    workflowExecution: { workflowId },
  });
  await waitUntil(
    async () => {
      try {
        await client.workflow.getHandle(workflowId).describe();
        return undefined;
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return true;
        throw err;
      }
    },
    { what: `deletion of ${workflowId}`, timeoutMs: 150_000, intervalMs: 250 },
  );
}

describe('the outcome is visible when it is known', () => {
  it('shows failed + compensating + not done while compensation is still deleting the pod', async () => {
    // Two failed deletes: compensation retries after 1 s and 2 s, so it takes at least 3 s.
    api.stack.cluster.faults.failNextRequests('DELETE', 'pods', 2, 500);
    const deletesBefore = podDeletes();
    const op = await acceptedCreate(api.app, api.tenantA, createBody(300));
    const early = await awaitOperation(api.app, api.tenantA, op.id, {
      until: (current) => current.status !== 'running',
    });
    const deletesAtDecision = podDeletes() - deletesBefore;
    expect(early).toMatchObject({ status: 'failed', phase: 'compensating', done: false });
    expect(early.error?.code).toBe('invalid_request');
    expect(early.error?.message).toContain('451 MiB');
    // Compensation had not finished: at most the first (failed) delete had been tried.
    expect(deletesAtDecision).toBeLessThan(3);

    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done).toMatchObject({ status: 'failed', phase: 'finished', done: true });
    expect(done.error?.code).toBe('invalid_request');
    expect(podDeletes() - deletesBefore).toBeGreaterThanOrEqual(3);
  });

  it('refuses to cancel a create whose outcome is known while it still compensates (409)', async () => {
    // Two failed deletes keep compensation running for at least 3 s.
    api.stack.cluster.faults.failNextRequests('DELETE', 'pods', 2, 500);
    const op = await acceptedCreate(api.app, api.tenantA, createBody(300));
    const early = await awaitOperation(api.app, api.tenantA, op.id, {
      until: (current) => current.status !== 'running',
    });
    expect(early).toMatchObject({ status: 'failed', phase: 'compensating', done: false });
    const cancel = await request(api.app)
      .post(`/v1/operations/${op.id}/cancel`)
      .set(bearer(api.tenantA));
    expect(cancel.status, cancel.text).toBe(409);
    expect(cancel.body.error).toMatchObject({
      code: 'already_done',
      details: { status: 'failed' },
    });
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done).toMatchObject({
      status: 'failed',
      done: true,
      error: { code: 'invalid_request' },
    });
    // Temporal agrees with the row: the workflow failed, it was not cancelled. (The row is
    // final once compensation has written it; the workflow closes in its next task.)
    const handle = api.stack.temporal.client.workflow.getHandle(op.id);
    await expect(handle.result()).rejects.toThrow();
    const described = await handle.describe();
    expect(described.status.name).toBe('FAILED');
  });

  it('deletes a sandbox whose create is compensating without cancelling that create', async () => {
    api.stack.cluster.faults.failNextRequests('DELETE', 'pods', 2, 500);
    const op = await acceptedCreate(api.app, api.tenantA, createBody(300));
    await awaitOperation(api.app, api.tenantA, op.id, {
      until: (current) => current.status !== 'running',
    });
    const deleted = await request(api.app)
      .delete(`/v1/sandboxes/${op.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(deleted.status, deleted.text).toBe(202);
    const deleteDone = await awaitOperation(api.app, api.tenantA, deleted.body.id as string);
    expect(deleteDone).toMatchObject({ status: 'succeeded', done: true });
    const create = await awaitOperation(api.app, api.tenantA, op.id);
    expect(create).toMatchObject({ status: 'failed', error: { code: 'invalid_request' } });
    // The delete waited for the create without cancelling it: Temporal agrees with the row.
    const described = await api.stack.temporal.client.workflow.getHandle(op.id).describe();
    expect(described.status.name).toBe('FAILED');
  });

  it('answers the synchronous create 400 before compensation has finished', async () => {
    api.stack.cluster.faults.failNextRequests('DELETE', 'pods', 2, 500);
    const deletesBefore = podDeletes();
    const response = await request(api.app)
      .post('/sync/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(300));
    const deletesAtAnswer = podDeletes() - deletesBefore;
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    const operationId = response.headers['operation-id'] as string;
    const atAnswer = await getOperation(operationId);
    expect(atAnswer.body).toMatchObject({ status: 'failed', done: false, phase: 'compensating' });
    expect(deletesAtAnswer).toBeLessThan(3);
    await awaitOperation(api.app, api.tenantA, operationId);
  });
});

describe('operations outlive their Temporal execution', { timeout: 240_000 }, () => {
  it('reads and lists an operation after its execution was deleted from Temporal', async () => {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done.status).toBe('succeeded');
    await deleteExecution(api.stack.temporal.client, op.id);

    const read = await getOperation(op.id);
    expect(read.status, read.text).toBe(200);
    expect(read.body).toMatchObject({
      id: op.id,
      status: 'succeeded',
      done: true,
      phase: 'finished',
      result: { sandbox: { id: op.sandbox_id, state: 'running' } },
    });
    const list = await request(api.app)
      .get('/v1/operations?status=succeeded&limit=200')
      .set(bearer(api.tenantA));
    expect(list.status).toBe(200);
    expect(list.body.operations.map((o: OperationBody) => o.id)).toContain(op.id);
  });

  it('replays the create with its Idempotency-Key after its execution was deleted', async () => {
    const key = `replay-after-retention-${Date.now()}`;
    const op = await acceptedCreate(api.app, api.tenantA, createBody(1024), {
      'Idempotency-Key': key,
    });
    await awaitOperation(api.app, api.tenantA, op.id);
    await deleteExecution(api.stack.temporal.client, op.id);

    const replay = await acceptedCreate(api.app, api.tenantA, createBody(1024), {
      'Idempotency-Key': key,
    });
    expect(replay).toMatchObject({ id: op.id, status: 'succeeded', done: true });
  });
});

describe('long-poll', () => {
  it('answers as soon as the operation changes, long before the timeout', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
      const waiting = await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.phase === 'waiting_for_ip',
      });
      expect(waiting.done).toBe(false);
      const started = Date.now();
      const poll = getOperation(op.id, '?wait=30s');
      // The change: a cancel, once the API holds the long-poll (it listens, then reads).
      await waitUntil(() => longPollsHeld() === 1, { what: 'the long-poll held by the API' });
      const cancel = await request(api.app)
        .post(`/v1/operations/${op.id}/cancel`)
        .set(bearer(api.tenantA));
      expect(cancel.status, cancel.text).toBe(202);
      const answered = await poll;
      const elapsedMs = Date.now() - started;
      expect(answered.status).toBe(200);
      expect(answered.body.status).toBe('cancelled');
      expect(elapsedMs).toBeLessThan(15_000);
      await awaitOperation(api.app, api.tenantA, op.id);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('reads the operation once, and once more per change it is woken for', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
      await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.phase === 'waiting_for_ip',
      });
      // The same store, counting this operation's reads and the wakes of its waits.
      const store = api.stack.store;
      let reads = 0;
      let wakes = 0;
      const counting: typeof store = {
        ...store,
        getOperation: (tenant, id) => {
          if (id === op.id) reads += 1;
          return store.getOperation(tenant, id);
        },
        waitForOperationChange: async (id, timeoutMs, signal) => {
          const changed = await store.waitForOperationChange(id, timeoutMs, signal);
          if (changed && id === op.id) wakes += 1;
          return changed;
        },
      };
      const app = api.appWith({}, { store: counting });
      // Sent now (`then` sends a supertest request), so the cancel below lands while it waits.
      const poll = request(app)
        .get(`/v1/operations/${op.id}?wait=30s`)
        .set(bearer(api.tenantA))
        .then((response) => response);
      await waitUntil(() => longPollsHeld() === 1, { what: 'the long-poll held by the API' });
      const cancel = await request(api.app)
        .post(`/v1/operations/${op.id}/cancel`)
        .set(bearer(api.tenantA));
      expect(cancel.status, cancel.text).toBe(202);
      const answered = await poll;
      expect(answered.status).toBe(200);
      expect(answered.body.status).toBe('cancelled');
      expect(wakes).toBeGreaterThanOrEqual(1);
      expect(reads, `${reads} reads for ${wakes} wakes`).toBe(1 + wakes);
      await awaitOperation(api.app, api.tenantA, op.id);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('answers at the timeout with the current state when nothing changes', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
      await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.phase === 'waiting_for_ip',
      });
      const started = Date.now();
      const answered = await getOperation(op.id, '?wait=2s');
      const elapsedMs = Date.now() - started;
      expect(answered.status).toBe(200);
      expect(answered.body).toMatchObject({ status: 'running', phase: 'waiting_for_ip' });
      expect(elapsedMs).toBeGreaterThanOrEqual(1_900);
      expect(elapsedMs).toBeLessThan(12_000);
      await request(api.app).post(`/v1/operations/${op.id}/cancel`).set(bearer(api.tenantA));
      await awaitOperation(api.app, api.tenantA, op.id);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('refuses a wait that is not a duration', async () => {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(1024));
    const answered = await getOperation(op.id, '?wait=soon');
    expect(answered.status).toBe(400);
    expect(answered.body.error.message).toContain('wait');
    await awaitOperation(api.app, api.tenantA, op.id);
  });

  it('accepts a wait longer than 60 s and caps it at 60 s (docs/api.md, "Long-poll")', () => {
    expect(MAX_WAIT_MS).toBe(60_000);
    expect(parseWait('90s')).toBe(60_000);
    expect(parseWait('1500ms')).toBe(1_500);
    expect(parseWait('30')).toBe(30_000);
  });
});

describe('a lost start response', () => {
  it('adopts the workflow that started although the start call failed', async () => {
    const client = api.stack.temporal.client;
    // The start reaches Temporal, but its answer is lost (as a timeout would lose it).
    const workflow = Object.create(client.workflow) as Client['workflow'];
    workflow.start = (async (...args: Parameters<Client['workflow']['start']>) => {
      await client.workflow.start(...args);
      throw new Error('14 UNAVAILABLE: the connection dropped before the answer');
    }) as Client['workflow']['start'];
    const lossy = Object.create(client, { workflow: { value: workflow } }) as Client;
    const app = api.appWith({}, { temporal: lossy });

    const op = await acceptedCreate(app, api.tenantA, createBody(1024));
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done.status).toBe('succeeded');
    const sandbox = await request(api.app)
      .get(`/v1/sandboxes/${op.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(sandbox.body.state).toBe('running');
  });
});
