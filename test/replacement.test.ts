/**
 * Re-placement end to end (docs/architecture.md, "Re-placement"): the HTTP API over a real dev
 * server, a worker with the real activities, and a simulated cluster of three nodes (over HTTP)
 * whose nodes are scripted to refuse with a shim code.
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitOperation,
  bearer,
  createBody,
  eventually,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';

const NODES = ['node-a', 'node-b', 'node-c'];
const TEMPLATES = {
  // Re-places on ResourceExhausted only: a node answering Unavailable is waited for.
  spread: { image: 'ghcr.io/durable-sandbox/base:1', replace_on: ['ResourceExhausted'] },
  // More placements than nodes: the fourth finds no node left.
  wide: {
    image: 'ghcr.io/durable-sandbox/base:1',
    replace_on: ['ResourceExhausted', 'Unavailable'],
    max_placements: 5,
  },
  plain: { image: 'ghcr.io/durable-sandbox/base:1' },
};
const FULL = 'no sandbox capacity left on the node';

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({
    stack: {
      cluster: {
        nodeNames: NODES,
        startupDelayMs: 100,
        rootfsMib: { spread: 451, wide: 451, plain: 451 },
      },
      learnRootfsFloors: false,
    },
    env: { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) },
  });
});
afterAll(async () => {
  await api?.stop();
});
afterEach(() => {
  for (const node of NODES) api.stack.cluster.faults.refuseOnNode(node, null);
});

interface Placement {
  placement: number;
  node: string;
  code: string;
  reason: string;
  at: string;
  pod_name: string;
}
type ReplacedOperation = OperationBody & { details: { placements: Placement[] } };

async function createAsync(template: string, app = api.app): Promise<OperationBody> {
  const response = await request(app)
    .post('/v1/sandboxes')
    .set(bearer(api.tenantA))
    .send(createBody(2048, { template }));
  expect(response.status, response.text).toBe(202);
  return response.body as OperationBody;
}

async function podsOf(sandboxId: string) {
  const list = await api.stack.kubernetes.core.listNamespacedPod({
    namespace: 'sandboxes',
    labelSelector: `durable-sandbox.dev/sandbox-id=${sandboxId}`,
  });
  return list.items;
}

/** The DELETEs of a pod the simulated apiserver served, with the DeleteOptions sent. */
function podDeletes(podName: string) {
  return api.stack.cluster.requests.filter(
    (r) => r.method === 'DELETE' && r.path === `/api/v1/namespaces/sandboxes/pods/${podName}`,
  );
}

function podCreates() {
  return api.stack.cluster.requests.filter(
    (r) => r.method === 'POST' && r.path === '/api/v1/namespaces/sandboxes/pods',
  ).length;
}

describe('re-placement on the simulated cluster', () => {
  it('a ResourceExhausted refusal on node A ends running on node B within seconds', async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    const started = Date.now();
    const op = await createAsync('spread');
    const done = (await awaitOperation(api.app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    expect(Date.now() - started).toBeLessThan(15_000);
    const base = `${op.sandbox_id.replace(/_/g, '-')}-g1`;
    expect(done.result?.sandbox).toMatchObject({ pod: { name: `${base}-p2` } });
    expect(done.details.placements).toEqual([
      {
        placement: 1,
        node: 'node-a',
        code: 'ResourceExhausted',
        reason: FULL,
        at: expect.any(String),
        pod_name: base,
      },
    ]);
    const pods = await podsOf(op.sandbox_id);
    expect(pods.map((p) => [p.metadata?.name, p.spec?.nodeName])).toEqual([
      [`${base}-p2`, 'node-b'],
    ]);
    // The first pod was deleted by its uid, as the apiserver saw the request.
    const firstUid = (await api.stack.store.getOperation(api.tenantA.id, op.id))?.placements[0]
      ?.podUid;
    expect(firstUid).toBeTruthy();
    expect(podDeletes(base).map((r) => r.deleteOptions)).toContainEqual(
      expect.objectContaining({ preconditions: { uid: firstUid } }),
    );
  });

  it('two refusing nodes, then a third that starts it', async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    api.stack.cluster.faults.refuseOnNode('node-b', 'Unavailable', 'sandbox runtime is down');
    const op = await createAsync('wide');
    const done = (await awaitOperation(api.app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    expect(done.details.placements.map((p) => [p.placement, p.node, p.code])).toEqual([
      [1, 'node-a', 'ResourceExhausted'],
      [2, 'node-b', 'Unavailable'],
    ]);
    const pods = await podsOf(op.sandbox_id);
    expect(pods.map((p) => p.spec?.nodeName)).toEqual(['node-c']);
    expect(pods[0]?.metadata?.name).toMatch(/-g1-p3$/);
  });

  it('every placement used up: no_node_available naming each node (sync 503 + Retry-After)', async () => {
    for (const node of NODES)
      api.stack.cluster.faults.refuseOnNode(node, 'ResourceExhausted', FULL);
    const response = await request(api.app)
      .post('/sync/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048, { template: 'spread' }));
    expect(response.status, response.text).toBe(503);
    expect(response.headers['retry-after']).toBe('10');
    expect(response.body.error.code).toBe('no_node_available');
    const message = response.body.error.message as string;
    for (const node of NODES)
      expect(message).toContain(`${node} refused it (ResourceExhausted: ${FULL})`);
    expect(message).toContain('the 3 placements of template spread are used up');
    expect(
      (response.body.error.details.placements as Array<{ node_name: string }>).map(
        (p) => p.node_name,
      ),
    ).toEqual(NODES);
    const operationId = response.headers['operation-id'] as string;
    const done = await awaitOperation(api.app, api.tenantA, operationId);
    expect(done).toMatchObject({ status: 'failed', done: true });
    expect(await podsOf(done.sandbox_id)).toEqual([]);
  });

  it('no node left: the next placement is unschedulable and the create ends at once', async () => {
    for (const node of NODES) api.stack.cluster.faults.refuseOnNode(node, 'Unavailable', 'down');
    const op = await createAsync('wide');
    const done = (await awaitOperation(api.app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('no_node_available');
    expect(done.error?.message).toMatch(
      /node-a refused it \(Unavailable: down\); node-b refused it \(Unavailable: down\); node-c refused it \(Unavailable: down\); no other node can take it \(no node can take pod .*-g1-p4: 0\/3 nodes are available/,
    );
    expect(done.details.placements).toHaveLength(3);
    expect(await podsOf(op.sandbox_id)).toEqual([]);
  });

  it('a cancel during the second placement leaves no pod', async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    // Unavailable is not in spread's replace_on: the second placement waits on node-b.
    api.stack.cluster.faults.refuseOnNode('node-b', 'Unavailable', 'sandbox runtime is down');
    const op = await createAsync('spread');
    const second = await eventually(
      async () => {
        const pods = await podsOf(op.sandbox_id);
        return pods.length === 1 && pods[0]?.spec?.nodeName === 'node-b' ? pods[0] : undefined;
      },
      { what: 'the second placement on node-b' },
    );
    expect(second.metadata?.name).toMatch(/-g1-p2$/);
    const cancel = await request(api.app)
      .post(`/v1/operations/${op.id}/cancel`)
      .set(bearer(api.tenantA));
    expect(cancel.status, cancel.text).toBe(202);
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done).toMatchObject({ status: 'cancelled', done: true });
    expect(await podsOf(op.sandbox_id)).toEqual([]);
    expect(podDeletes(second.metadata?.name ?? '').map((r) => r.deleteOptions)).toContainEqual(
      expect.objectContaining({ preconditions: { uid: second.metadata?.uid } }),
    );
  });

  it('a template without replace_on still waits for its deadline', async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    const createsBefore = podCreates();
    const app = api.appWith({ CREATE_DEADLINE_MS: '4000' });
    const started = Date.now();
    const op = await createAsync('plain', app);
    const done = (await awaitOperation(app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.error?.code).toBe('pod_never_ready');
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_500);
    expect(done.details.placements).toEqual([]);
    expect(podCreates() - createsBefore).toBe(1);
  });
});
