/**
 * Every apiserver answer to a pod create, through the API, a worker with the real activities, a
 * real dev server and the simulated apiserver over HTTP: permanent refusals end the create at
 * once as `invalid_request` quoting the apiserver, a quota as `quota_exceeded`, an RBAC 403
 * that lasts past its bound as `unavailable` naming the permission, and 401/5xx and a passing RBAC
 * 403 (a restarted kube-apiserver whose RBAC caches are syncing) are ridden out
 * (kubernetes/apiserver-errors.ts).
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { classifyApiserverError } from '../kubernetes/apiserver-errors.js';
import {
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';

let api: ApiStack;
const PERMISSION_BOUND_MS = 5_000;
beforeAll(async () => {
  // A lasting RBAC 403 gives up after 5 s here instead of the service's 60 s.
  api = await startApiStack({
    stack: {
      cluster: { startupDelayMs: 100 },
      refusalBoundsMs: { permission: PERMISSION_BOUND_MS },
    },
  });
});
afterAll(async () => {
  await api?.stop();
});
afterEach(() => {
  const faults = api.stack.cluster.faults;
  faults.limitEphemeralStorage(null);
  faults.quotaPods(null);
  faults.deny('create', 'pods', false);
});

function podCreates(since: number) {
  return api.stack.cluster.requests.filter(
    (r) => r.method === 'POST' && r.path.endsWith('/pods') && r.at >= since,
  );
}

/** Creates through the asynchronous route and waits for the operation to be done. */
async function createAndWait(diskMib = 2048): Promise<OperationBody> {
  const accepted = await request(api.app)
    .post('/v1/sandboxes')
    .set(bearer(api.tenantA))
    .send(createBody(diskMib));
  expect(accepted.status, accepted.text).toBe(202);
  return awaitOperation(api.app, api.tenantA, (accepted.body as OperationBody).id, {
    timeoutMs: 40_000,
  });
}

describe('a pod create the apiserver refuses', () => {
  it('ends at once as invalid_request quoting a LimitRange refusal, without retrying', async () => {
    api.stack.cluster.faults.limitEphemeralStorage('2Gi');
    const since = Date.now();
    const op = await createAndWait(3000);
    expect(op.status).toBe('failed');
    expect(op.error?.code).toBe('invalid_request');
    expect(op.error?.message).toMatch(
      /^the apiserver refused the pod: pods "sbx-[^"]+" is forbidden: maximum ephemeral-storage usage per Container is 2Gi, but limit is 3000Mi$/,
    );
    expect(Date.parse(op.updated_at) - Date.parse(op.created_at)).toBeLessThan(10_000);
    expect(podCreates(since)).toHaveLength(1);
    const sandbox = await request(api.app)
      .get(`/v1/sandboxes/${op.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(sandbox.body).toMatchObject({
      state: 'failed',
      failure: { code: 'invalid_request' },
    });
  });

  it('ends as invalid_request on 422 Invalid and on a missing namespace (404)', async () => {
    api.stack.cluster.faults.failNextRequests('POST', 'pods', 1, 422);
    const invalid = await createAndWait();
    expect(invalid.error?.code).toBe('invalid_request');
    expect(invalid.error?.message).toMatch(
      /^the apiserver refused the pod: Pod "sbx-[^"]+" is invalid: spec\.containers\[0\]\.resources\.requests: Invalid value/,
    );
    api.stack.cluster.faults.failNextRequests('POST', 'pods', 1, 404);
    const missing = await createAndWait();
    expect(missing.error).toMatchObject({
      code: 'invalid_request',
      message: 'the apiserver refused the pod: namespaces "sandboxes" not found',
    });
  });

  it('ends as quota_exceeded naming the quota; the synchronous route answers 429 with Retry-After', async () => {
    api.stack.cluster.faults.quotaPods({ name: 'sandbox-quota', pods: 0 });
    const op = await createAndWait();
    expect(op.error?.code).toBe('quota_exceeded');
    expect(op.error?.message).toMatch(/exceeded quota: sandbox-quota, requested: pods=1/);
    const sync = await request(api.app)
      .post('/sync/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048));
    expect(sync.status, sync.text).toBe(429);
    expect(sync.headers['retry-after']).toBe('30');
    expect(sync.body.error.code).toBe('quota_exceeded');
  });

  it('ends as unavailable naming the missing permission when RBAC refuses the create past its bound', async () => {
    api.stack.cluster.faults.deny('create', 'pods', true);
    const since = Date.now();
    const op = await createAndWait();
    expect(op.error?.code).toBe('unavailable');
    expect(op.error?.message).toMatch(
      /^the service account may not create pods \(deploy\/rbac\.yaml is not applied\?\), refused for over 5 s: pods is forbidden: User "simulated" cannot create resource "pods"/,
    );
    // Retried with back-off while the bound lasted, then given up: the last refusal came after it.
    const creates = podCreates(since);
    expect(creates.length).toBeGreaterThan(1);
    expect(creates.every((r) => r.status === 403)).toBe(true);
    expect(creates.at(-1)!.at - creates[0]!.at).toBeGreaterThanOrEqual(PERMISSION_BOUND_MS - 1_000);
  });

  it('rides out the RBAC 403 of a restarted apiserver whose caches are syncing: 403 twice, then created', async () => {
    api.stack.cluster.faults.failNextRequests('POST', 'pods', 2, 403);
    const since = Date.now();
    const op = await createAndWait();
    expect(op.status, JSON.stringify(op.error)).toBe('succeeded');
    expect(podCreates(since).map((r) => r.status)).toEqual([403, 403, 201]);
  });

  it('rides out 401 and 500 answers: the create succeeds once the apiserver accepts it', async () => {
    api.stack.cluster.faults.failNextRequests('POST', 'pods', 1, 401);
    api.stack.cluster.faults.failNextRequests('POST', 'pods', 1, 500);
    const since = Date.now();
    const op = await createAndWait();
    expect(op.status, JSON.stringify(op.error)).toBe('succeeded');
    expect(podCreates(since).map((r) => r.status)).toEqual([401, 500, 201]);
  });
});

describe('the classification table', () => {
  it('classifies by status and Status message, and network and configuration errors', () => {
    const answer = (code: number, message: string) => ({
      code,
      body: JSON.stringify({ kind: 'Status', code, reason: 'Forbidden', message }),
    });
    expect(classifyApiserverError(answer(403, 'exceeded quota: q')).kind).toBe('quota');
    expect(classifyApiserverError(answer(403, 'User "x" cannot create resource "pods"')).kind).toBe(
      'permission',
    );
    expect(classifyApiserverError(answer(403, 'maximum memory usage')).kind).toBe('refused');
    expect(
      classifyApiserverError(answer(403, 'pods "x" is forbidden: not yet ready to handle request'))
        .kind,
    ).toBe('transient');
    expect(classifyApiserverError(answer(400, 'bad')).kind).toBe('refused');
    expect(classifyApiserverError(answer(401, 'Unauthorized')).kind).toBe('unauthorized');
    for (const code of [409, 429, 500, 503]) {
      expect(classifyApiserverError(answer(code, 'busy')).kind).toBe('transient');
    }
    const refusedConnection = Object.assign(new TypeError('fetch failed'), {
      cause: { code: 'ECONNREFUSED' },
    });
    expect(classifyApiserverError(refusedConnection).kind).toBe('transient');
    expect(
      classifyApiserverError(
        new Error('HTTP protocol is not allowed when skipTLSVerify is not set or false'),
      ).kind,
    ).toBe('configuration');
  });
});
