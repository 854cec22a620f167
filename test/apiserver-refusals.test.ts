/**
 * Every apiserver answer to a pod create, through the API, a worker with the real activities, a
 * real dev server and the simulated apiserver over HTTP: permanent refusals end the create at
 * once as `invalid_request` quoting the apiserver, a quota as `quota_exceeded`, an RBAC 403
 * that lasts past its bound as `unavailable` naming the permission (with no pod to delete when
 * every attempt was refused; a compensation refused past the bound leaves the pod to the orphan
 * sweeper), and 401/5xx and a passing RBAC
 * 403 (a restarted kube-apiserver whose RBAC caches are syncing) are ridden out
 * (src/kubernetes/apiserver-errors.ts).
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { classifyApiserverError } from '../src/kubernetes/apiserver-errors.js';
import { podNameFor } from '../src/kubernetes/pod-spec.js';
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
afterEach(async () => {
  const faults = api.stack.cluster.faults;
  faults.limitEphemeralStorage(null);
  faults.quotaPods(null);
  for (const verb of ['create', 'get', 'delete']) faults.deny(verb, 'pods', false);
  // A readiness report measured while RBAC denied something must not refuse the next test's create.
  await waitUntil(async () => (await request(api.app).get('/readyz')).status === 200, {
    timeoutMs: 20_000,
  });
});

/**
 * RBAC denies `verbs` on pods from now on, after the API's readiness report (cached 5 s,
 * src/api/readiness.ts) was measured without it: the create is accepted, and the worker meets the
 * refusals.
 */
async function denyPods(...verbs: string[]): Promise<void> {
  const ready = await request(api.app).get('/readyz');
  expect(ready.status, ready.text).toBe(200);
  for (const verb of verbs) api.stack.cluster.faults.deny(verb, 'pods', true);
}

function podCreates(since: number) {
  return api.stack.cluster.requestsWhere({ verb: 'create', resource: 'pods', since });
}

/** The requests the apiserver saw for the sandbox's pod by name: compensation's lookups and deletes. */
function podRequests(sandboxId: string) {
  return api.stack.cluster.requestsWhere({
    verb: ['get', 'update', 'patch', 'delete'],
    resource: 'pods',
    name: podNameFor(sandboxId, 1),
  });
}

/** Milliseconds from the operation's creation to its last update (when it was done). */
function tookMs(op: OperationBody): number {
  return Date.parse(op.updated_at) - Date.parse(op.created_at);
}

const PERMISSION_MESSAGE =
  /^the service account may not create pods \(deploy\/rbac\.yaml is not applied\?\), refused for over 5 s: pods is forbidden: User "simulated" cannot create resource "pods"/;

/** Creates through the asynchronous route and waits for the operation to be done. */
async function createAndWait(diskMib = 2048): Promise<OperationBody> {
  const { id } = await acceptedCreate(api.app, api.tenantA, createBody(diskMib));
  return awaitOperation(api.app, api.tenantA, id, { timeoutMs: 40_000 });
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
    expect(op.error?.message).toMatch(/exceeded quota: sandbox-quota, requested: pods=1$/);
    // The namespace's usage and quota are every tenant's figures: not in the message or details.
    expect(JSON.stringify(op.error)).not.toMatch(/used:|limited:/);
    const sync = await request(api.app)
      .post('/sync/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048));
    expect(sync.status, sync.text).toBe(429);
    expect(sync.headers['retry-after']).toBe('30');
    expect(sync.body.error.code).toBe('quota_exceeded');
    expect(sync.text).not.toMatch(/used:|limited:/);
  });

  it('ends as unavailable naming the missing permission when RBAC refuses the create past its bound, without a delete', async () => {
    // RBAC refuses every pod verb: a compensation that tried to delete could never succeed.
    await denyPods('create', 'get', 'delete');
    const since = Date.now();
    const op = await createAndWait();
    expect(op.status).toBe('failed');
    expect(op.error?.code).toBe('unavailable');
    expect(op.error?.message).toMatch(PERMISSION_MESSAGE);
    // Retried with back-off while the bound lasted, then given up: the last refusal came after it.
    const creates = podCreates(since);
    expect(creates.length).toBeGreaterThan(1);
    expect(creates.every((r) => r.status === 403)).toBe(true);
    expect(creates.at(-1)!.at - creates[0]!.at).toBeGreaterThanOrEqual(PERMISSION_BOUND_MS - 1_000);
    // Every attempt was refused, so no pod can exist: compensation neither looked one up nor deleted.
    expect(podRequests(op.sandbox_id)).toEqual([]);
    // Within the bound plus the step's back-off (at most 10 s) and a margin for this machine.
    expect(tookMs(op)).toBeLessThan(PERMISSION_BOUND_MS + 20_000);
  });

  it('still deletes by name when an attempt before the lasting RBAC 403 got an ambiguous 500', async () => {
    // The 500 comes after the POST was sent: the apiserver may have stored the pod.
    api.stack.cluster.faults.failNextRequests('POST', 'pods', 1, 500);
    await denyPods('create');
    const since = Date.now();
    const op = await createAndWait();
    expect(op.error?.code).toBe('unavailable');
    expect(op.error?.message).toMatch(PERMISSION_MESSAGE);
    const creates = podCreates(since);
    expect(creates.map((r) => r.status).slice(0, 2)).toEqual([500, 403]);
    // Compensation looked the pod up by its name after the last create attempt (404: absent).
    const lookups = podRequests(op.sandbox_id);
    expect(lookups.map((r) => `${r.method} ${r.status}`)).toEqual(['GET 404']);
    expect(lookups[0]!.at).toBeGreaterThanOrEqual(creates.at(-1)!.at);
  });

  it('leaves the pod to the orphan sweeper when the compensation delete is refused by RBAC past its bound', async () => {
    api.stack.cluster.faults.failNextRequests('POST', 'pods', 1, 500);
    await denyPods('create', 'get', 'delete');
    const op = await createAndWait();
    expect(op.status).toBe('failed');
    expect(op.error?.code).toBe('unavailable');
    expect(op.error?.message).toMatch(PERMISSION_MESSAGE);
    // The lookup was retried, refused every time, for the bound; then the create ended.
    const lookups = podRequests(op.sandbox_id);
    expect(lookups.length).toBeGreaterThan(1);
    expect(lookups.every((r) => r.method === 'GET' && r.status === 403)).toBe(true);
    expect(lookups.at(-1)!.at - lookups[0]!.at).toBeGreaterThanOrEqual(PERMISSION_BOUND_MS - 1_000);
    // The sandbox is failed, which makes any pod of it an orphan for the sweeper.
    const sandbox = await request(api.app)
      .get(`/v1/sandboxes/${op.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(sandbox.body).toMatchObject({ state: 'failed', failure: { code: 'unavailable' } });
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
