/**
 * The HTTP API end to end: supertest against createApp over a real dev server, a worker with
 * the real activities, the simulated cluster (over HTTP) and a SQLite store.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requestHash } from '../src/api/idempotency.js';
import { newOperationId, newSandboxId } from '../contract/ids.js';
import { resourcesFromWire } from '../contract/sandbox-json.js';
import { openDatabase } from '../src/store/database.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  finishedCreate,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({
    // This suite watches the node refuse disk 300 again and again.
    stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false },
  });
});
afterAll(async () => {
  await api?.stop();
});

function podDeletes(podName: string) {
  return api.stack.cluster.requestsWhere({
    verb: 'delete',
    resource: 'pods',
    namespace: 'sandboxes',
    name: podName,
  });
}

describe('asynchronous create', () => {
  it('fails as invalid_request naming 451 MiB within seconds when the node refuses the disk', async () => {
    const started = Date.now();
    const accepted = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(300));
    expect(accepted.status, accepted.text).toBe(202);
    const op = accepted.body as OperationBody;
    expect(op).toMatchObject({
      type: 'sandbox.create',
      status: 'running',
      done: false,
      error: null,
    });
    expect(op.id).toMatch(/^op_[a-z2-7]{26}$/);
    expect(op.sandbox_id).toMatch(/^sbx_[a-z2-7]{26}$/);
    expect(accepted.headers.location).toBe(`/v1/operations/${op.id}`);
    expect(accepted.headers['retry-after']).toBe('1');
    expect(Date.parse(op.deadline_at as string) - Date.parse(op.created_at)).toBe(60_000);

    const done = await awaitOperation(api.app, api.tenantA, op.id);
    const elapsedMs = Date.now() - started;
    expect(done).toMatchObject({ status: 'failed', done: true, phase: 'finished', result: null });
    expect(done.error?.code).toBe('invalid_request');
    expect(done.error?.message).toContain('451 MiB');
    expect(done.error?.details).toMatchObject({ reason: expect.stringContaining('451 MiB') });
    expect(elapsedMs).toBeLessThan(20_000);

    const sandbox = await request(api.app)
      .get(`/v1/sandboxes/${op.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(sandbox.status).toBe(200);
    expect(sandbox.body).toMatchObject({
      id: op.sandbox_id,
      state: 'failed',
      failure: { code: 'invalid_request', message: expect.stringContaining('451 MiB') },
    });
    const finished = await request(api.app).get(`/v1/operations/${op.id}`).set(bearer(api.tenantA));
    expect(finished.headers['retry-after']).toBeUndefined();
    console.log(`async disk 300: accepted -> operation failed in ${elapsedMs} ms`);
  });

  it('succeeds with a pod IP when the disk is large enough (2048 MiB)', async () => {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(2048));
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done).toMatchObject({ status: 'succeeded', phase: 'finished', error: null });
    expect(done.result?.sandbox).toMatchObject({
      id: op.sandbox_id,
      state: 'running',
      template: 'base',
      resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
      pod: {
        name: expect.any(String),
        uid: expect.any(String),
        ip: expect.stringMatching(/^\d+\.\d+\.\d+\.\d+$/),
      },
      failure: null,
    });
    const sandbox = await request(api.app)
      .get(`/v1/sandboxes/${op.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(sandbox.body.state).toBe('running');
  });

  it('accepts cpu as a Kubernetes quantity, keeps it exactly and renders it canonically in the pod', async () => {
    const cases: Array<[sent: number | string, cores: number, quantity: string]> = [
      ['500m', 0.5, '500m'],
      [0.25, 0.25, '250m'],
      ['1.5', 1.5, '1500m'],
      ['2', 2, '2'],
      ['1e-3', 0.001, '1m'],
    ];
    for (const [sent, cores, quantity] of cases) {
      const done = await finishedCreate(api.app, api.tenantA, {
        template: 'base',
        resources: { cpu: sent, memory_mib: 256, disk_mib: 2048 },
      });
      expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
      const created = done.result?.sandbox as
        { resources: { cpu: number }; pod: { name: string } } | undefined;
      expect(created?.resources.cpu, `cpu ${sent}`).toBe(cores);
      const sandbox = await request(api.app)
        .get(`/v1/sandboxes/${done.sandbox_id}`)
        .set(bearer(api.tenantA));
      expect(sandbox.body.resources.cpu, `cpu ${sent} read back`).toBe(cores);
      const pod = await api.stack.kubernetes.core.readNamespacedPod({
        name: created?.pod.name ?? '',
        namespace: api.stack.namespace,
      });
      expect(pod.spec?.containers[0]?.resources, `cpu ${sent} in the pod`).toMatchObject({
        requests: { cpu: quantity },
        limits: { cpu: quantity },
      });
    }
  });

  it('ends pod_never_ready at the deadline when the node refuses with Unavailable', async () => {
    const short = api.appWith({ CREATE_DEADLINE_MS: '3000', SYNC_READINESS_BUDGET_MS: '3000' });
    api.stack.cluster.faults.refuseWith('Unavailable', 'runtime is not ready');
    try {
      const started = Date.now();
      const [asyncAccepted, sync] = await Promise.all([
        acceptedCreate(short, api.tenantA, createBody(2048)),
        request(short).post('/sync/v1/sandboxes').set(bearer(api.tenantA)).send(createBody(2048)),
      ]);
      expect(sync.status, sync.text).toBe(503);
      expect(sync.body.error.code).toBe('pod_never_ready');
      // The budget that ran out, what became of the create, and what to do instead.
      expect(sync.body.error.message).toMatch(
        /^pod \S+ had no IP within the synchronous readiness budget of 3 s \(SYNC_READINESS_BUDGET_MS\): the create failed and its pod is deleted\. .*POST \/v1\/sandboxes/,
      );
      expect(sync.body.error.message).not.toContain('create deadline');
      // The same request again meets the same budget: no Retry-After to invite it.
      expect(sync.headers['retry-after']).toBeUndefined();
      expect(sync.headers['operation-id']).toMatch(/^op_/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(3_000);

      const done = await awaitOperation(short, api.tenantA, asyncAccepted.id);
      expect(done.status).toBe('failed');
      expect(done.error?.code).toBe('pod_never_ready');
      expect(done.error?.message).toMatch(/had no IP within the create deadline of 3 s/);
    } finally {
      api.stack.cluster.faults.refuseWith(null);
    }
  });
});

describe('synchronous create', () => {
  it('answers 400 invalid_request naming 451 MiB when the node refuses the disk', async () => {
    const started = Date.now();
    const response = await request(api.app)
      .post('/sync/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(300));
    const elapsedMs = Date.now() - started;
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect(response.body.error.message).toContain('451 MiB');
    expect(response.headers['operation-id']).toMatch(/^op_[a-z2-7]{26}$/);
    expect(elapsedMs).toBeLessThan(20_000);
    console.log(`sync disk 300: answered 400 in ${elapsedMs} ms`);
  });

  it('answers 201 with the running sandbox when the disk is large enough', async () => {
    const response = await request(api.app)
      .post('/sync/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048));
    expect(response.status, response.text).toBe(201);
    expect(response.body).toMatchObject({ state: 'running', pod: { ip: expect.any(String) } });
    expect(response.headers.location).toBe(`/v1/sandboxes/${response.body.id}`);
    const operationId = response.headers['operation-id'] as string;
    const operation = await request(api.app)
      .get(`/v1/operations/${operationId}`)
      .set(bearer(api.tenantA));
    expect(operation.body).toMatchObject({ status: 'succeeded', sandbox_id: response.body.id });
  });
});

describe('tenant isolation', () => {
  it("answers 404 for another tenant's sandbox and operation, never 403", async () => {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(300));
    const other = bearer(api.tenantB);
    const answers = await Promise.all([
      request(api.app).get(`/v1/operations/${op.id}`).set(other),
      request(api.app).post(`/v1/operations/${op.id}/cancel`).set(other),
      request(api.app).get(`/v1/sandboxes/${op.sandbox_id}`).set(other),
      request(api.app).delete(`/v1/sandboxes/${op.sandbox_id}`).set(other),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(404);
      expect(answer.body.error.code).toBe('not_found');
    }
    const list = await request(api.app).get('/v1/sandboxes').set(other);
    expect(list.body.sandboxes.map((s: { id: string }) => s.id)).not.toContain(op.sandbox_id);
    await awaitOperation(api.app, api.tenantA, op.id);
  });
});

describe('idempotency', () => {
  it('replays the same operation for the same key and body, starting one workflow', async () => {
    const key = `key-${Date.now()}`;
    const send = () =>
      acceptedCreate(api.app, api.tenantB, createBody(300), { 'Idempotency-Key': key });
    const first = await send();
    const second = await send();
    expect(second.id).toBe(first.id);
    expect(second.sandbox_id).toBe(first.sandbox_id);
    const sandboxes = await api.stack.store.listSandboxes(api.tenantB.id, { limit: 200 });
    expect(sandboxes.sandboxes.filter((s) => s.operationId === first.id)).toHaveLength(1);
    const runs = await waitUntil(
      async () => {
        const found: string[] = [];
        for await (const execution of api.stack.temporal.client.workflow.list({
          query: `WorkflowId = '${first.id}'`,
        })) {
          found.push(execution.runId);
        }
        return found.length > 0 ? found : undefined;
      },
      { what: 'the workflow in visibility' },
    );
    expect(runs).toHaveLength(1);

    const conflict = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantB))
      .set('Idempotency-Key', key)
      .send(createBody(2048));
    expect(conflict.status).toBe(409);
    expect(conflict.body.error.code).toBe('idempotency_conflict');
    // The same key and body on the synchronous route is another request (another deadline).
    const otherRoute = await request(api.app)
      .post('/sync/v1/sandboxes')
      .set(bearer(api.tenantB))
      .set('Idempotency-Key', key)
      .send(createBody(300));
    expect(otherRoute.status).toBe(409);
    expect(otherRoute.body.error.code).toBe('idempotency_conflict');
    await awaitOperation(api.app, api.tenantB, first.id);
  });

  it('starts the workflow on replay when an earlier attempt stored the sandbox but never started it', async () => {
    const key = `crashed-${Date.now()}`;
    const body = createBody(300);
    const operationId = newOperationId();
    const sandboxId = newSandboxId();
    await api.stack.store.createSandbox({
      id: sandboxId,
      tenant: api.tenantB.id,
      template: body.template,
      resources: resourcesFromWire(body.resources),
      operationId,
      idempotency: { key, requestHash: requestHash(body, 'async') },
      // As the API stores it: the asynchronous route's deadline, which the worker's admission checks.
      deadlineMs: api.config.createDeadlineMs,
    });
    const replay = await acceptedCreate(api.app, api.tenantB, body, { 'Idempotency-Key': key });
    expect(replay).toMatchObject({ id: operationId, sandbox_id: sandboxId });
    const done = await awaitOperation(api.app, api.tenantB, operationId);
    expect(done.error?.code).toBe('invalid_request');
  });
});

describe('cancel', () => {
  it('cancels a create waiting for its IP: it ends cancelled and its pod is deleted', async () => {
    api.stack.cluster.faults.neverReady(true);
    let op: OperationBody;
    try {
      op = await acceptedCreate(api.app, api.tenantA, createBody(2048));
      await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.phase === 'waiting_for_ip',
      });
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
    const cancel = await request(api.app)
      .post(`/v1/operations/${op.id}/cancel`)
      .set(bearer(api.tenantA));
    expect(cancel.status, cancel.text).toBe(202);
    expect(cancel.body.id).toBe(op.id);
    expect(cancel.headers.location).toBe(`/v1/operations/${op.id}`);

    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done).toMatchObject({ status: 'cancelled', done: true, error: { code: 'cancelled' } });
    const sandbox = (await api.stack.store.getSandbox(api.tenantA.id, op.sandbox_id))!;
    expect(sandbox.state).toBe('failed');
    expect(podDeletes(sandbox.pod.name as string)).toHaveLength(1);

    const again = await request(api.app)
      .post(`/v1/operations/${op.id}/cancel`)
      .set(bearer(api.tenantA));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('already_done');
  });
});

describe('delete', () => {
  it('deletes a running sandbox: the pod is gone and the sandbox ends deleted', async () => {
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    expect(created.status).toBe('succeeded');
    const sandboxId = created.sandbox_id;
    const podName = (created.result?.sandbox.pod as { name: string }).name;

    const accepted = await request(api.app)
      .delete(`/v1/sandboxes/${sandboxId}`)
      .set(bearer(api.tenantA));
    expect(accepted.status, accepted.text).toBe(202);
    expect(accepted.body).toMatchObject({
      type: 'sandbox.delete',
      sandbox_id: sandboxId,
      deadline_at: null,
    });
    expect(accepted.headers.location).toBe(`/v1/operations/${accepted.body.id}`);

    const done = await awaitOperation(api.app, api.tenantA, accepted.body.id);
    expect(done).toMatchObject({
      status: 'succeeded',
      phase: 'finished',
      result: { sandbox: { state: 'deleted', pod: { name: podName, ip: null } } },
    });
    expect(podDeletes(podName).map((r) => r.status)).toEqual([200]);
    const pods = await api.stack.kubernetes.core.listNamespacedPod({ namespace: 'sandboxes' });
    expect(pods.items.map((pod) => pod.metadata?.name)).not.toContain(podName);

    const again = await request(api.app)
      .delete(`/v1/sandboxes/${sandboxId}`)
      .set(bearer(api.tenantA));
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('already_done');
  });

  it("keeps a succeeded create's result as the create left it (running, its pod and IP) after the sandbox is deleted", async () => {
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    expect(created.result?.sandbox).toMatchObject({ state: 'running', failure: null });
    const deleting = await request(api.app)
      .delete(`/v1/sandboxes/${created.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(deleting.status, deleting.text).toBe(202);
    await awaitOperation(api.app, api.tenantA, deleting.body.id);

    const read = async () =>
      (await request(api.app).get(`/v1/operations/${created.id}`).set(bearer(api.tenantA)))
        .body as OperationBody;
    // From the store: the operation's result, not the sandbox now (which is deleted).
    const after = await read();
    expect(after).toMatchObject({ status: 'succeeded', result: created.result });
    const listed = await request(api.app).get('/v1/operations').set(bearer(api.tenantA));
    const inList = (listed.body.operations as OperationBody[]).find((op) => op.id === created.id);
    expect(inList?.result).toEqual(created.result);
    const sandbox = await request(api.app)
      .get(`/v1/sandboxes/${created.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(sandbox.body).toMatchObject({ state: 'deleted', pod: { ip: null } });

    // Read back from Temporal (an operation without a row): the pod and IP the workflow returned.
    const { db } = openDatabase(api.stack.storeOptions);
    try {
      await db.deleteFrom('operations').where('id', '=', created.id).execute();
    } finally {
      await db.destroy();
    }
    const fromTemporal = await read();
    expect(fromTemporal.result?.sandbox).toMatchObject({
      state: 'running',
      failure: null,
      pod: (created.result?.sandbox as { pod: unknown }).pod,
    });
  });

  it('deletes a failed sandbox: it ends deleted and keeps its failure as history', async () => {
    const op = await acceptedCreate(api.app, api.tenantA, createBody(300));
    expect((await awaitOperation(api.app, api.tenantA, op.id)).status).toBe('failed');
    const accepted = await request(api.app)
      .delete(`/v1/sandboxes/${op.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(accepted.status, accepted.text).toBe(202);
    expect((await awaitOperation(api.app, api.tenantA, accepted.body.id)).status).toBe('succeeded');
    const sandbox = (await api.stack.store.getSandbox(api.tenantA.id, op.sandbox_id))!;
    expect(sandbox.state).toBe('deleted');
    expect(sandbox.failure?.code).toBe('invalid_request');
  });

  it('deletes a sandbox still creating: the create is cancelled and the sandbox ends deleted', async () => {
    api.stack.cluster.faults.neverReady(true);
    let op: OperationBody;
    try {
      op = await acceptedCreate(api.app, api.tenantA, createBody(2048));
      await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.phase === 'waiting_for_ip',
      });
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
    const accepted = await request(api.app)
      .delete(`/v1/sandboxes/${op.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(accepted.status, accepted.text).toBe(202);
    const deleted = await awaitOperation(api.app, api.tenantA, accepted.body.id);
    expect(deleted.status).toBe('succeeded');
    const create = await awaitOperation(api.app, api.tenantA, op.id);
    expect(create.status).toBe('cancelled');
    const sandbox = (await api.stack.store.getSandbox(api.tenantA.id, op.sandbox_id))!;
    expect(sandbox.state).toBe('deleted');
    await waitUntil(async () => podDeletes(sandbox.pod.name as string).length > 0);
  });
});

describe('lists', () => {
  it("lists the tenant's operations newest first, filtered by status, page by page", async () => {
    // tenantB has at least the idempotency suite's failed creates; make two more of its own.
    const ops: OperationBody[] = [];
    for (const disk of [300, 300]) {
      ops.push(await acceptedCreate(api.app, api.tenantB, createBody(disk)));
    }
    for (const op of ops) await awaitOperation(api.app, api.tenantB, op.id);
    const listed = await waitUntil(
      async () => {
        const response = await request(api.app)
          .get('/v1/operations?status=failed&limit=50')
          .set(bearer(api.tenantB));
        expect(response.status, response.text).toBe(200);
        const ids = (response.body.operations as OperationBody[]).map((op) => op.id);
        return ops.every((op) => ids.includes(op.id))
          ? (response.body.operations as OperationBody[])
          : undefined;
      },
      { what: 'failed operations listed' },
    );
    expect(listed.every((op) => op.status === 'failed')).toBe(true);
    const created = listed.map((op) => op.created_at);
    expect(created).toEqual([...created].sort().reverse());
    expect(listed[0]?.error?.code).toBe('invalid_request');

    const firstPage = await request(api.app)
      .get('/v1/operations?status=failed&limit=1')
      .set(bearer(api.tenantB));
    expect(firstPage.body.operations).toHaveLength(1);
    expect(firstPage.body.next_page_token).toEqual(expect.any(String));
    const secondPage = await request(api.app)
      .get(`/v1/operations?status=failed&limit=1&page_token=${firstPage.body.next_page_token}`)
      .set(bearer(api.tenantB));
    expect(secondPage.status).toBe(200);
    expect(secondPage.body.operations).toHaveLength(1);
    expect(secondPage.body.operations[0].id).not.toBe(firstPage.body.operations[0].id);

    const running = await request(api.app)
      .get('/v1/operations?status=running')
      .set(bearer(api.tenantB));
    expect(running.body.operations.map((op: OperationBody) => op.id)).not.toContain(ops[0]?.id);
    const otherTenant = await request(api.app).get('/v1/operations').set(bearer(api.tenantA));
    expect(otherTenant.body.operations.map((op: OperationBody) => op.id)).not.toContain(ops[0]?.id);
  });

  it("lists the tenant's sandboxes by state, page by page", async () => {
    const failed = await request(api.app)
      .get('/v1/sandboxes?state=failed')
      .set(bearer(api.tenantB));
    expect(failed.status).toBe(200);
    expect(failed.body.sandboxes.length).toBeGreaterThan(0);
    expect(failed.body.sandboxes.every((s: { state: string }) => s.state === 'failed')).toBe(true);
    const page = await request(api.app).get('/v1/sandboxes?limit=1').set(bearer(api.tenantB));
    expect(page.body.sandboxes).toHaveLength(1);
    const next = await request(api.app)
      .get(`/v1/sandboxes?limit=1&page_token=${page.body.next_page_token}`)
      .set(bearer(api.tenantB));
    expect(next.body.sandboxes[0].id).not.toBe(page.body.sandboxes[0].id);
  });

  it('reads an empty page_token as the first page (AIP-158)', async () => {
    for (const path of ['/v1/sandboxes', '/v1/operations']) {
      const first = await request(api.app).get(`${path}?limit=1`).set(bearer(api.tenantB));
      const empty = await request(api.app)
        .get(`${path}?limit=1&page_token=`)
        .set(bearer(api.tenantB));
      expect(empty.status, `${path}: ${empty.text}`).toBe(200);
      expect(empty.body).toEqual(first.body);
    }
    const long = await request(api.app)
      .get(`/v1/sandboxes?page_token=${'a'.repeat(4097)}`)
      .set(bearer(api.tenantB));
    expect(long.status).toBe(400);
    expect(long.body.error.message).toContain('page_token must be at most 4096 characters');
  });

  it('answers 400 for a page token it did not issue', async () => {
    for (const path of ['/v1/sandboxes?page_token=bm9wZQ', '/v1/operations?page_token=bm9wZQ']) {
      const response = await request(api.app).get(path).set(bearer(api.tenantA));
      expect(response.status, `${path}: ${response.text}`).toBe(400);
      expect(response.body.error.code).toBe('invalid_request');
    }
  });
});
