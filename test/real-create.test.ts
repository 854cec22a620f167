/**
 * The seed's cases end to end on the real apiserver tier: the HTTP API over a real dev server,
 * a worker with the real activities, and a real kube-apiserver + etcd with the node agent in
 * kubelet's place. The service runs as the `durable-sandbox` user, which has only the Role of
 * deploy/rbac.yaml, so every create here also proves that Role sufficient.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
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
import { startRealTier, type RealTier } from './support/real-tier.js';
import { waitUntil } from '../tools/wait-until.js';

let real: RealTier;
let api: ApiStack;
let namespace: string;
// A cold build of etcd and kube-apiserver (apiserver-tier/binaries.ts) may run in this hook.
beforeAll(async () => {
  real = await startRealTier();
  namespace = await real.freshNamespace('create');
  api = await startApiStack({
    stack: { apiserver: real.serviceTarget(namespace), learnRootfsFloors: false },
  });
}, 20 * 60_000);
afterAll(async () => {
  await api?.stop();
  await real?.stop();
});

/** The pods of a sandbox still in the namespace (any phase, terminating included). */
async function podsOf(sandboxId: string, ns = namespace): Promise<string[]> {
  const list = await real.adminCore.listNamespacedPod({
    namespace: ns,
    labelSelector: `durable-sandbox.dev/sandbox-id=${sandboxId}`,
  });
  return list.items.map((pod) => pod.metadata?.name ?? '');
}

async function awaitNoPods(sandboxId: string, ns = namespace): Promise<void> {
  await waitUntil(async () => (await podsOf(sandboxId, ns)).length === 0, {
    timeoutMs: 30_000,
    what: `the pods of ${sandboxId} to be gone`,
  });
}

describe('creates on a real kube-apiserver', () => {
  it('fails as invalid_request naming 451 MiB within seconds when the node refuses the disk', async () => {
    const started = Date.now();
    const op = await acceptedCreate(api.app, api.tenantA, createBody(300));
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    const elapsedMs = Date.now() - started;
    expect(done).toMatchObject({ status: 'failed', done: true });
    expect(done.error?.code).toBe('invalid_request');
    expect(done.error?.message).toContain('451 MiB');
    expect(elapsedMs).toBeLessThan(20_000);
    // Compensation deleted the pod; the node agent finished the graceful deletion.
    await awaitNoPods(op.sandbox_id);
    // The refusal is a kubelet-shaped event on the real apiserver.
    const events = await real.adminCore.listNamespacedEvent({
      namespace,
      fieldSelector: 'reason=FailedCreatePodSandBox',
    });
    const refusal = events.items.find((event) =>
      event.involvedObject.name?.startsWith(op.sandbox_id.replace('_', '-')),
    );
    expect(refusal).toMatchObject({
      type: 'Warning',
      source: { component: 'kubelet', host: real.tier.nodeName },
      reportingComponent: 'kubelet',
      reportingInstance: real.tier.nodeName,
      message: expect.stringContaining('[space-err=InvalidArgument]'),
    });
  });

  it('answers the synchronous create 400 invalid_request naming 451 MiB', async () => {
    const started = Date.now();
    const response = await request(api.app)
      .post('/sync/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(300));
    expect(response.status, response.text).toBe(400);
    expect(response.body.error.code).toBe('invalid_request');
    expect(response.body.error.message).toContain('451 MiB');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  it('runs a sandbox whose disk fits, with the IP the node gave its pod', async () => {
    const done = await finishedCreate(api.app, api.tenantA, createBody(2048));
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    const pod = done.result?.sandbox.pod as { name: string; ip: string };
    const live = await real.adminCore.readNamespacedPod({ name: pod.name, namespace });
    expect(live.status?.phase).toBe('Running');
    expect(live.spec?.nodeName).toBe(real.tier.nodeName);
    expect(pod.ip).toBe(live.status?.podIP);
    expect(pod.ip).toMatch(/^10\.244\.\d+\.\d+$/);
  });

  it('ends a create the node never decides as pod_never_ready at the deadline', async () => {
    real.agent.refuseWith('Unavailable', 'failed to reserve sandbox name');
    let op: OperationBody;
    try {
      op = await acceptedCreate(
        api.appWith({ CREATE_DEADLINE_MS: '4000' }),
        api.tenantA,
        createBody(2048),
      );
      // The node's refusals are recorded, and are not decisive.
      await waitUntil(
        async () => {
          const events = await real.adminCore.listNamespacedEvent({
            namespace,
            fieldSelector: 'reason=FailedCreatePodSandBox',
          });
          return events.items.some((event) => event.message?.includes('[space-err=Unavailable]'));
        },
        { what: 'an Unavailable refusal event' },
      );
    } finally {
      real.agent.refuseWith(null);
    }
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done).toMatchObject({ status: 'failed', error: { code: 'pod_never_ready' } });
    await awaitNoPods(op.sandbox_id);
  });

  it('cancels a create waiting for its IP: it ends cancelled and its pod is gone', async () => {
    // Never ready until the cancel has finished: the agent sees the bound pod through its own
    // watch, which may come after the operation's phase on a loaded machine.
    real.agent.neverReady(true);
    try {
      const op = await acceptedCreate(api.app, api.tenantA, createBody(2048));
      await awaitOperation(api.app, api.tenantA, op.id, {
        until: (current) => current.phase === 'waiting_for_ip',
      });
      expect(await podsOf(op.sandbox_id)).toHaveLength(1);
      const cancel = await request(api.app)
        .post(`/v1/operations/${op.id}/cancel`)
        .set(bearer(api.tenantA));
      expect(cancel.status, cancel.text).toBe(202);
      const done = await awaitOperation(api.app, api.tenantA, op.id);
      expect(done).toMatchObject({ status: 'cancelled', done: true });
      await awaitNoPods(op.sandbox_id);
    } finally {
      real.agent.neverReady(false);
    }
  });

  it('deletes a running sandbox: the pod is gone and the sandbox ends deleted', async () => {
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    expect(created.status).toBe('succeeded');
    const accepted = await request(api.app)
      .delete(`/v1/sandboxes/${created.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(accepted.status, accepted.text).toBe(202);
    const deleted = await awaitOperation(api.app, api.tenantA, accepted.body.id as string);
    expect(deleted.status, JSON.stringify(deleted.error)).toBe('succeeded');
    await awaitNoPods(created.sandbox_id);
    const sandbox = await request(api.app)
      .get(`/v1/sandboxes/${created.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(sandbox.body.state).toBe('deleted');
  });
});

describe('without the events watch grant', () => {
  let degraded: ApiStack;
  let degradedNamespace: string;
  beforeAll(async () => {
    degradedNamespace = await real.freshNamespace('nowatch', { eventsWatch: false });
    degraded = await startApiStack({
      stack: {
        apiserver: real.serviceTarget(degradedNamespace),
        learnRootfsFloors: false,
        // A lasting 403, not a restarted apiserver's: degrade at once instead of after the
        // service's 60 s bound (PERMISSION_BOUND_MS), so the 4 s deadline sees the warning.
        refusalBoundsMs: { permission: 0 },
      },
      env: { CREATE_DEADLINE_MS: '4000' },
    });
  });
  afterAll(async () => {
    await degraded?.stop();
  });

  it('a refused create waits for the deadline, with one warning naming the real 403', async () => {
    const done = await finishedCreate(degraded.app, degraded.tenantA, createBody(300));
    expect(done).toMatchObject({ status: 'failed', error: { code: 'pod_never_ready' } });
    const refused = degraded.stack.warnings.filter(
      (entry) =>
        entry.resource === 'events' && String(entry.msg).includes('(HTTP 403: events is forbidden'),
    );
    expect(refused).toHaveLength(1);
    await awaitNoPods(done.sandbox_id, degradedNamespace);
  });
});
