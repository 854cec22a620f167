/**
 * Re-placement on the real apiserver tier (docs/architecture.md, "Re-placement"): three node
 * agents (one `system:node:<name>` each) and the scheduler stand-in binding by required node
 * affinity, the service as the `durable-sandbox` user, the HTTP API over a real dev server.
 */
import request from 'supertest';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { awaitOperation, bearer } from './support/api.js';
import { startRealTier, type RealTier } from './support/real-tier.js';
import {
  FULL,
  REPLACEMENT_ROOTFS_MIB,
  startReplacementSuite,
  type ReplacedOperation,
  type ReplacementSuite,
} from './support/replacement.js';
import { waitUntil } from '../tools/wait-until.js';

const NODES = ['agent-node-1', 'agent-node-2', 'agent-node-3'];

let real: RealTier;
let suite: ReplacementSuite;
let api: ReplacementSuite['api'];
let namespace: string;
beforeAll(async () => {
  real = await startRealTier({ rootfsMib: REPLACEMENT_ROOTFS_MIB }, { nodeNames: NODES });
  namespace = await real.freshNamespace('replace');
  suite = await startReplacementSuite({ apiserver: real.serviceTarget(namespace) });
  api = suite.api;
}, 20 * 60_000);
afterAll(async () => {
  await suite?.stop();
  await real?.stop();
});
afterEach(() => {
  for (const agent of real.agents.values()) agent.refuseWith(null);
});

const createAsync = (template: string, app = api.app) => suite.createAsync(template, app);
const podsOf = (sandboxId: string) => suite.podsOf(sandboxId);

function refuse(node: string, code: string, message = FULL): void {
  real.agents.get(node)?.refuseWith(code, message);
}

describe('re-placement on a real kube-apiserver', () => {
  it('a ResourceExhausted refusal on node 1 ends running on node 2 within seconds', async () => {
    refuse('agent-node-1', 'ResourceExhausted');
    const started = Date.now();
    const op = await createAsync('spread');
    const done = (await awaitOperation(api.app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(done.details.placements.map((p) => [p.node, p.code])).toEqual([
      ['agent-node-1', 'ResourceExhausted'],
    ]);
    // The first pod is gone (deleted by uid; its kubelet finished the graceful deletion).
    const pods = await waitUntil(
      async () => {
        const now = await podsOf(op.sandbox_id);
        return now.length === 1 ? now : undefined;
      },
      { what: 'only the second placement left' },
    );
    expect(pods.map((p) => [p.metadata?.name?.endsWith('-g1-p2'), p.spec?.nodeName])).toEqual([
      [true, 'agent-node-2'],
    ]);
    const events = await real.adminCore.listNamespacedEvent({
      namespace,
      fieldSelector: 'reason=FailedCreatePodSandBox',
    });
    expect(events.items.map((e) => e.source?.host)).toContain('agent-node-1');
  });

  it('two refusing nodes, then a third that starts it', async () => {
    refuse('agent-node-1', 'ResourceExhausted');
    refuse('agent-node-2', 'ResourceExhausted');
    const op = await createAsync('spread');
    const done = (await awaitOperation(api.app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    expect(done.details.placements.map((p) => p.node)).toEqual(['agent-node-1', 'agent-node-2']);
    const pods = await waitUntil(async () => {
      const now = await podsOf(op.sandbox_id);
      return now.length === 1 ? now : undefined;
    });
    expect(pods[0]?.spec?.nodeName).toBe('agent-node-3');
  });

  it('every placement used up: no_node_available naming each node', async () => {
    for (const node of NODES) refuse(node, 'ResourceExhausted');
    const op = await createAsync('spread');
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done.error?.code).toBe('no_node_available');
    for (const node of NODES) {
      expect(done.error?.message).toContain(`${node} refused it (ResourceExhausted: ${FULL})`);
    }
    await waitUntil(async () => (await podsOf(op.sandbox_id)).length === 0);
  });

  it('a cancel during the second placement leaves no pod', async () => {
    refuse('agent-node-1', 'ResourceExhausted');
    refuse('agent-node-2', 'Unavailable', 'sandbox runtime is down'); // not in replace_on: waits
    const op = await createAsync('spread');
    await waitUntil(
      async () => {
        const pods = await podsOf(op.sandbox_id);
        return pods.some((p) => p.spec?.nodeName === 'agent-node-2');
      },
      { what: 'the second placement on agent-node-2' },
    );
    const cancel = await request(api.app)
      .post(`/v1/operations/${op.id}/cancel`)
      .set(bearer(api.tenantA));
    expect(cancel.status, cancel.text).toBe(202);
    const done = await awaitOperation(api.app, api.tenantA, op.id);
    expect(done).toMatchObject({ status: 'cancelled', done: true });
    await waitUntil(async () => (await podsOf(op.sandbox_id)).length === 0, {
      what: 'no pod left',
    });
  });

  it('a template without replace_on still waits for its deadline', async () => {
    refuse('agent-node-1', 'ResourceExhausted');
    const app = api.appWith({ CREATE_DEADLINE_MS: '5000' });
    const started = Date.now();
    const op = await createAsync('plain', app);
    const done = (await awaitOperation(app, api.tenantA, op.id)) as ReplacedOperation;
    expect(done.error?.code).toBe('pod_never_ready');
    expect(Date.now() - started).toBeGreaterThanOrEqual(4_500);
    expect(done.details.placements).toEqual([]);
  });
});
