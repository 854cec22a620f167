/**
 * Re-placement end to end (docs/architecture.md, "Re-placement"): the HTTP API over a real dev
 * server, a worker with the real activities, and a simulated cluster of three nodes (over HTTP)
 * whose nodes are scripted to refuse with a shim code.
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { workerRegistry } from '../src/activities/metrics.js';
import { awaitOperation, bearer, createBody } from './support/api.js';
import {
  FULL,
  REPLACEMENT_ROOTFS_MIB,
  startReplacementSuite,
  type ReplacedOperation,
  type ReplacementSuite,
} from './support/replacement.js';
import { activitySummaries } from './support/temporal.js';
import { waitUntil } from '../tools/wait-until.js';

const NODES = ['node-a', 'node-b', 'node-c'];

let suite: ReplacementSuite;
let api: ReplacementSuite['api'];
beforeAll(async () => {
  suite = await startReplacementSuite({
    cluster: { nodeNames: NODES, startupDelayMs: 100, rootfsMib: REPLACEMENT_ROOTFS_MIB },
  });
  api = suite.api;
});
afterAll(async () => {
  await suite?.stop();
});
afterEach(() => {
  for (const node of NODES) api.stack.cluster.faults.refuseOnNode(node, null);
});

const createAsync = (template: string, app = api.app) => suite.createAsync(template, app);
const podsOf = (sandboxId: string) => suite.podsOf(sandboxId);

/** The DELETEs of a pod the simulated apiserver served, with the DeleteOptions sent. */
function podDeletes(podName: string) {
  return api.stack.cluster.requestsWhere({
    verb: 'delete',
    resource: 'pods',
    namespace: 'sandboxes',
    name: podName,
  });
}

/** `durable_sandbox_replacements_total{template, code}` of the worker's registry now. */
async function replacementsCounted(template: string, code: string): Promise<number> {
  const metric = workerRegistry.getSingleMetric('durable_sandbox_replacements_total');
  const { values } = metric ? await metric.get() : { values: [] };
  return values
    .filter((v) => v.labels.template === template && v.labels.code === code)
    .reduce((sum, v) => sum + v.value, 0);
}

function podCreates() {
  return api.stack.cluster.requestsWhere({
    verb: 'create',
    resource: 'pods',
    namespace: 'sandboxes',
  }).length;
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
    // The refused pod and the one it runs on.
    expect(done.details.attempts).toBe(2);
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
    const exhaustedBefore = await replacementsCounted('wide', 'ResourceExhausted');
    const unavailableBefore = await replacementsCounted('wide', 'Unavailable');
    const op = await createAsync('wide');
    const done = (await awaitOperation(api.app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    expect(done.details.placements.map((p) => [p.placement, p.node, p.code])).toEqual([
      [1, 'node-a', 'ResourceExhausted'],
      [2, 'node-b', 'Unavailable'],
    ]);
    // One re-placement counted per refused placement, by template and code.
    expect((await replacementsCounted('wide', 'ResourceExhausted')) - exhaustedBefore).toBe(1);
    expect((await replacementsCounted('wide', 'Unavailable')) - unavailableBefore).toBe(1);
    const pods = await podsOf(op.sandbox_id);
    expect(pods.map((p) => p.spec?.nodeName)).toEqual(['node-c']);
    expect(pods[0]?.metadata?.name).toMatch(/-g1-p3$/);
    expect(done.details.attempts).toBe(3);
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
    const done = (await awaitOperation(api.app, api.tenantA, operationId)) as ReplacedOperation;
    expect(done).toMatchObject({ status: 'failed', done: true });
    // Three pods, each refused: no pod beyond them.
    expect(done.details.attempts).toBe(3);
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
    // The three refused pods and the fourth, unschedulable one.
    expect(done.details.attempts).toBe(4);
    expect(await podsOf(op.sandbox_id)).toEqual([]);
  });

  it('a cancel during the second placement leaves no pod', async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    // Unavailable is not in spread's replace_on: the second placement waits on node-b.
    api.stack.cluster.faults.refuseOnNode('node-b', 'Unavailable', 'sandbox runtime is down');
    const op = await createAsync('spread');
    // The operation shows the refused placement while the second one runs.
    const running = (await awaitOperation(api.app, api.tenantA, op.id, {
      until: (o) => ((o as ReplacedOperation).details?.placements ?? []).length > 0,
    })) as ReplacedOperation;
    expect(running.status).toBe('running');
    expect(running.details.placements.map((p) => [p.placement, p.node, p.code])).toEqual([
      [1, 'node-a', 'ResourceExhausted'],
    ]);
    const second = await waitUntil(
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

  it('an InvalidArgument refusal during the second placement ends the create invalid_request', async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    api.stack.cluster.faults.refuseOnNode('node-b', 'InvalidArgument', 'the image is malformed');
    const createsBefore = podCreates();
    const op = await createAsync('wide');
    const done = (await awaitOperation(api.app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done).toMatchObject({ status: 'failed', done: true });
    expect(done.error?.code).toBe('invalid_request');
    expect(done.error?.message).toContain('the image is malformed');
    expect(done.details.placements.map((p) => p.node)).toEqual(['node-a']);
    // No third placement (two pod creates), and no pod left.
    expect(podCreates() - createsBefore).toBe(2);
    expect(await podsOf(op.sandbox_id)).toEqual([]);
  });

  it('the deadline during the second placement ends the create pod_never_ready, no pod left', async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    // Unavailable is not in spread's replace_on: the second placement waits on node-b.
    api.stack.cluster.faults.refuseOnNode('node-b', 'Unavailable', 'sandbox runtime is down');
    const app = api.appWith({ CREATE_DEADLINE_MS: '5000' });
    const op = await createAsync('spread', app);
    const done = (await awaitOperation(app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.error?.code).toBe('pod_never_ready');
    expect(done.error?.message).toMatch(/-g1-p2 had no IP within the create deadline of 5 s/);
    expect(done.details.placements.map((p) => p.node)).toEqual(['node-a']);
    expect(await podsOf(op.sandbox_id)).toEqual([]);
  });

  it('a template without replace_on still waits for its deadline', async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    const createsBefore = podCreates();
    const countedBefore = await replacementsCounted('plain', 'ResourceExhausted');
    const app = api.appWith({ CREATE_DEADLINE_MS: '4000' });
    const started = Date.now();
    const op = await createAsync('plain', app);
    const done = (await awaitOperation(app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.error?.code).toBe('pod_never_ready');
    expect(Date.now() - started).toBeGreaterThanOrEqual(3_500);
    expect(done.details.placements).toEqual([]);
    expect(podCreates() - createsBefore).toBe(1);
    expect(await replacementsCounted('plain', 'ResourceExhausted')).toBe(countedBefore);
  });

  it("the Temporal UI shows each placement's steps: its pod, the nodes it avoids, the delete by uid", async () => {
    api.stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', FULL);
    const op = await createAsync('spread');
    const done = (await awaitOperation(api.app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    const base = `${op.sandbox_id.replace(/_/g, '-')}-g1`;
    const firstUid = (await api.stack.store.getOperation(api.tenantA.id, op.id))?.placements[0]
      ?.podUid;
    const pod = `create pod of ${op.sandbox_id} (template spread, disk 2048 MiB, generation 1`;
    // The summaries the UI reads: the history's userMetadata of each scheduled activity.
    expect(await activitySummaries(api.stack.temporal.client, op.id)).toEqual([
      { type: 'createPod', summary: `${pod})` },
      {
        type: 'awaitPodReady',
        summary: `wait for pod ${base}'s IP or the node's refusal (re-place on ResourceExhausted)`,
      },
      { type: 'deletePod', summary: `delete pod ${base} (uid ${firstUid})` },
      { type: 'createPod', summary: `${pod}, placement 2, not on node-a)` },
      {
        type: 'awaitPodReady',
        summary: `wait for pod ${base}-p2's IP or the node's refusal (re-place on ResourceExhausted; ends if no node is left)`,
      },
      {
        type: 'markSandboxRunning',
        summary: expect.stringMatching(/^mark sbx_\S+ running at \S+/),
      },
    ]);
  });
});
