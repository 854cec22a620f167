/**
 * Refusal events you can believe, end to end (docs/security.md, "Refusal events and learned
 * floors"): events written over HTTP through @kubernetes/client-node by someone who may create
 * Events in the namespace. A refusal from another node than the pod's, one claiming a rootfs
 * above the template's largest disk, or one from the future decides nothing and teaches nothing;
 * the same refusal written through events.k8s.io/v1 by a kubelet-like reporter fails the create
 * `invalid_request` and teaches the floor; a floor's reason shows no request value; the operator
 * routes refuse tenant tokens and clear a floor. A real dev server, a worker, the simulated
 * cluster (its node silent, so every refusal is the test's), SQLite.
 */
import { EventsV1Api, type CoreV1Event, type V1Pod } from '@kubernetes/client-node';
import type { Express } from 'express';
import type { TemplateConfig } from '../src/config/index.js';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';

const NAMESPACE = 'sandboxes';
const NODE = 'sim-node-1';
/**
 * One template (or image) per test, so each starts with no floor; `bounded` and `shared-small`
 * allow at most 8 GiB.
 */
const TEMPLATES: Record<string, TemplateConfig> = {
  othernode: { image: 'example.test/othernode:1' },
  bounded: { image: 'example.test/bounded:1', max_disk_mib: 8192 },
  // Two templates of one image: the large one may not teach a floor that refuses the small one.
  'shared-large': { image: 'example.test/shared:1' },
  'shared-small': { image: 'example.test/shared:1', max_disk_mib: 8192 },
  future: { image: 'example.test/future:1' },
  eventsv1: { image: 'example.test/eventsv1:1' },
  cleared: { image: 'example.test/cleared:1' },
};
/** Long enough for the informers to see a forged event, short enough for a test. */
const SHORT_DEADLINE = { CREATE_DEADLINE_MS: '4000' };
const ADMIN_TOKEN = 'operator-token-for-tests';
/** The disk every create here asks for: a value no other tenant may see in a floor. */
const REQUESTED_MIB = 317;
const REQUEST_VALUE = /\b317\b/;
const ENV = { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) };

let api: ApiStack;
let app: Express;
beforeAll(async () => {
  api = await startApiStack({
    stack: { cluster: { startupDelayMs: 100 }, templates: TEMPLATES },
    env: ENV,
  });
  // The node never acts on its own: every refusal below is written by the test.
  api.stack.cluster.faults.neverReady(true);
  app = api.appWith({ ...ENV, ...SHORT_DEADLINE, ADMIN_TOKENS: `ops:${ADMIN_TOKEN}` });
});
afterAll(async () => {
  await api?.stop();
});

function refusalMessage(rootfsMib: number): string {
  return (
    'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
    `rootfs_size_mb=${REQUESTED_MIB} is smaller than cloned rootfs size ${rootfsMib} MiB`
  );
}

/** Starts a create of `template` with {@link REQUESTED_MIB} of disk; returns its id and its pod, once bound. */
async function createAndBind(template: string): Promise<{ id: string; pod: V1Pod }> {
  const { id, sandbox_id: sandboxId } = await acceptedCreate(app, api.tenantA, {
    template,
    resources: { cpu: 1, memory_mib: 256, disk_mib: REQUESTED_MIB },
  });
  const pod = await waitUntil(
    async () => {
      const pods = await api.stack.kubernetes.core.listNamespacedPod({ namespace: NAMESPACE });
      return pods.items.find(
        (p) =>
          p.metadata?.labels?.['durable-sandbox.dev/sandbox-id'] === sandboxId && p.spec?.nodeName,
      );
    },
    { what: `the pod of ${sandboxId} bound to a node` },
  );
  return { id, pod };
}

/** A core/v1 FailedCreatePodSandBox Warning about `pod`, as kubelet's recorder writes it. */
function coreRefusal(pod: V1Pod, overrides: Partial<CoreV1Event> = {}): CoreV1Event {
  const now = new Date();
  return {
    metadata: { name: `${pod.metadata?.name}.forged${Date.now().toString(16)}` },
    involvedObject: {
      kind: 'Pod',
      namespace: NAMESPACE,
      name: pod.metadata?.name,
      uid: pod.metadata?.uid,
      apiVersion: 'v1',
    },
    reason: 'FailedCreatePodSandBox',
    message: refusalMessage(451),
    source: { component: 'kubelet', host: NODE },
    firstTimestamp: now,
    lastTimestamp: now,
    count: 1,
    type: 'Warning',
    reportingComponent: 'kubelet',
    reportingInstance: NODE,
    ...overrides,
  };
}

async function writeCoreEvent(event: CoreV1Event): Promise<void> {
  await api.stack.kubernetes.core.createNamespacedEvent({ namespace: NAMESPACE, body: event });
}

async function floorOf(template: string): Promise<Record<string, unknown>> {
  const response = await request(app).get(`/v1/templates/${template}`).set(bearer(api.tenantB));
  expect(response.status, response.text).toBe(200);
  return response.body.rootfs_floor as Record<string, unknown>;
}

async function done(id: string): Promise<OperationBody> {
  return awaitOperation(app, api.tenantA, id);
}

describe('refusal events are believed only from the pod node kubelet, within bounds', () => {
  it('a refusal reported by another node decides nothing and teaches nothing', async () => {
    const { id, pod } = await createAndBind('othernode');
    await writeCoreEvent(
      coreRefusal(pod, {
        source: { component: 'kubelet', host: 'sim-node-9' },
        reportingInstance: 'sim-node-9',
      }),
    );
    const operation = await done(id);
    expect(operation.error?.code, JSON.stringify(operation.error)).toBe('pod_never_ready');
    expect(await floorOf('othernode')).toEqual({ source: 'unknown', rootfs_mib: null });
  });

  it("a refusal claiming a rootfs above the template's largest disk decides and teaches nothing", async () => {
    const { id, pod } = await createAndBind('bounded');
    await writeCoreEvent(coreRefusal(pod, { message: refusalMessage(9000) }));
    const operation = await done(id);
    expect(operation.error?.code, JSON.stringify(operation.error)).toBe('pod_never_ready');
    expect(await floorOf('bounded')).toEqual({ source: 'unknown', rootfs_mib: null });
    expect(
      api.stack.logs.some(
        (line) =>
          line.pod_uid === pod.metadata?.uid &&
          String(line.msg).includes('out of bounds') &&
          String(line.reason).includes('above the largest disk template bounded allows (8192 MiB)'),
      ),
    ).toBe(true);
  });

  it('a refusal on a large template claiming a rootfs above a smaller template of the same image decides and teaches nothing', async () => {
    const { id, pod } = await createAndBind('shared-large');
    await writeCoreEvent(coreRefusal(pod, { message: refusalMessage(9000) }));
    const operation = await done(id);
    expect(operation.error?.code, JSON.stringify(operation.error)).toBe('pod_never_ready');
    expect(await floorOf('shared-small')).toEqual({ source: 'unknown', rootfs_mib: null });
    expect(await floorOf('shared-large')).toEqual({ source: 'unknown', rootfs_mib: null });
    expect(
      api.stack.logs.some(
        (line) =>
          line.pod_uid === pod.metadata?.uid &&
          String(line.reason).includes(
            'above the largest disk template shared-small allows (8192 MiB) (it shares its image with shared-large)',
          ),
      ),
    ).toBe(true);
  });

  it('a refusal from the future decides nothing and teaches nothing', async () => {
    const { id, pod } = await createAndBind('future');
    const future = new Date('9999-01-01T00:00:00Z');
    await writeCoreEvent(coreRefusal(pod, { firstTimestamp: future, lastTimestamp: future }));
    const operation = await done(id);
    expect(operation.error?.code, JSON.stringify(operation.error)).toBe('pod_never_ready');
    expect(await floorOf('future')).toEqual({ source: 'unknown', rootfs_mib: null });
  });

  it('the refusal written through events.k8s.io/v1 by a kubelet-like reporter fails the create invalid_request and teaches a floor without request values', async () => {
    const { id, pod } = await createAndBind('eventsv1');
    const events = api.stack.kubernetes.kubeConfig.makeApiClient(EventsV1Api);
    await events.createNamespacedEvent({
      namespace: NAMESPACE,
      body: {
        metadata: { name: `${pod.metadata?.name}.v1${Date.now().toString(16)}` },
        eventTime: new Date(),
        reportingController: 'kubernetes.io/kubelet',
        reportingInstance: NODE,
        action: 'CreatePodSandbox',
        reason: 'FailedCreatePodSandBox',
        regarding: {
          kind: 'Pod',
          namespace: NAMESPACE,
          name: pod.metadata?.name,
          uid: pod.metadata?.uid,
          apiVersion: 'v1',
        },
        note: refusalMessage(451),
        type: 'Warning',
      },
    });
    const operation = await done(id);
    expect(operation.error?.code, JSON.stringify(operation.error)).toBe('invalid_request');
    expect(operation.error?.details).toMatchObject({ node_name: NODE, rootfs_mib: 451 });

    // Another tenant's view: the size alone; not the node, the time or the refused request's disk.
    expect(await floorOf('eventsv1')).toEqual({ source: 'learned', rootfs_mib: 451 });
    // The tenant whose create taught it: template, size, node and time, built from the floor's
    // own fields, never the node's text.
    const own = await request(app).get('/v1/templates/eventsv1').set(bearer(api.tenantA));
    const floor = own.body.rootfs_floor as Record<string, unknown>;
    expect(floor).toMatchObject({ source: 'learned', rootfs_mib: 451, node_name: NODE });
    expect(floor.reason).toBe(
      `node ${NODE} refused a create of template eventsv1: cloned rootfs size 451 MiB ` +
        `(${String(floor.learned_at)})`,
    );
    expect(JSON.stringify(own.body)).not.toMatch(REQUEST_VALUE);
    const list = await request(app).get('/v1/templates').set(bearer(api.tenantB));
    const listed = JSON.stringify(list.body);
    expect(listed).not.toContain('rootfs_size_mb');
    expect(listed).not.toMatch(REQUEST_VALUE);
    const refused = await request(app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantB))
      .send({ template: 'eventsv1', resources: { cpu: 1, memory_mib: 256, disk_mib: 200 } });
    expect(refused.status, refused.text).toBe(400);
    expect(JSON.stringify(refused.body.error.details)).not.toMatch(REQUEST_VALUE);
    expect(refused.body.error.message).not.toMatch(REQUEST_VALUE);
  });
});

describe('operator routes of learned floors', () => {
  it('refuse tenant tokens and no token; list where a floor came from; clear it', async () => {
    const { id, pod } = await createAndBind('cleared');
    await writeCoreEvent(coreRefusal(pod));
    expect((await done(id)).error?.code).toBe('invalid_request');
    expect((await floorOf('cleared')).source).toBe('learned');

    for (const headers of [bearer(api.tenantA), bearer(api.tenantB), {}]) {
      const list = await request(app).get('/admin/v1/rootfs-floors').set(headers);
      expect(list.status, list.text).toBe(401);
      expect(list.body.error.code).toBe('unauthenticated');
      const clear = await request(app).delete('/admin/v1/rootfs-floors/cleared').set(headers);
      expect(clear.status, clear.text).toBe(401);
    }
    expect((await floorOf('cleared')).source).toBe('learned');

    const operator = { Authorization: `Bearer ${ADMIN_TOKEN}` };
    const list = await request(app).get('/admin/v1/rootfs-floors').set(operator);
    expect(list.status, list.text).toBe(200);
    expect(list.body.floors).toContainEqual({
      image: 'example.test/cleared:1',
      templates: ['cleared'],
      learned_from_template: 'cleared',
      rootfs_mib: 451,
      learned_at: expect.any(String),
      node_name: NODE,
      tenant: api.tenantA.id,
      operation_id: id,
      reason: 'cloned rootfs size 451 MiB',
    });

    const clear = await request(app).delete('/admin/v1/rootfs-floors/cleared').set(operator);
    expect(clear.status, clear.text).toBe(200);
    expect(clear.body.cleared).toMatchObject({ image: 'example.test/cleared:1', operation_id: id });
    expect(await floorOf('cleared')).toEqual({ source: 'unknown', rootfs_mib: null });
    const again = await request(app).delete('/admin/v1/rootfs-floors/cleared').set(operator);
    expect(again.status, again.text).toBe(404);
    // A tenant's token is no operator's even where an operator token is configured.
    expect(
      (await request(app).get('/admin/v1/rootfs-floors').set(bearer(api.tenantA))).status,
    ).toBe(401);
  });

  it('are not served without ADMIN_TOKENS', async () => {
    const response = await request(api.app).get('/admin/v1/rootfs-floors').set(bearer(api.tenantA));
    expect(response.status).toBe(404);
  });
});
