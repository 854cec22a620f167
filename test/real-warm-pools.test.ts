/**
 * Warm pools on the real apiserver tier (docs/architecture.md, "Warm pools"): a real
 * kube-apiserver + etcd, the node agent in kubelet's place, the service as the `durable-sandbox`
 * user with only deploy/rbac.yaml's Role. A matching create claims a ready pod by one update
 * under its resourceVersion, which the real apiserver enforces: concurrent creates never share
 * a pod, and the rest go cold.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { warmPoolWorkflowId } from '../contract/index.js';
import { POD_LABELS, podNameFor } from '../src/kubernetes/pod-spec.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  startApiStack,
  type ApiStack,
} from './support/api.js';
import { startRealTier, type RealTier } from './support/real-tier.js';
import { waitUntil } from '../tools/wait-until.js';

const RESOURCES = { cpu: 1, memory_mib: 256, disk_mib: 2048 };
const TEMPLATES = {
  base: {
    image: 'ghcr.io/durable-sandbox/base:1',
    warm_pool: { size: 4, resources: RESOURCES },
  },
};

let real: RealTier;
let api: ApiStack;
let namespace: string;
// A cold build of etcd and kube-apiserver (apiserver-tier/binaries.ts) may run in this hook.
beforeAll(async () => {
  real = await startRealTier();
  namespace = await real.freshNamespace('warm');
  api = await startApiStack({
    env: { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) },
    stack: { apiserver: real.serviceTarget(namespace), learnRootfsFloors: false },
  });
}, 20 * 60_000);
afterAll(async () => {
  await api?.stop();
  await real?.stop();
});

async function readyWarmPods(): Promise<number> {
  const list = await real.adminCore.listNamespacedPod({
    namespace,
    labelSelector: `${POD_LABELS.warmPool}=base`,
  });
  return list.items.filter((pod) => pod.status?.podIP && !pod.metadata?.deletionTimestamp).length;
}

describe('a warm pool on a real kube-apiserver', () => {
  it('hands a matching create a ready pod through the Role of deploy/rbac.yaml', async () => {
    await waitUntil(async () => (await readyWarmPods()) === 4, { timeoutMs: 120_000 });
    const created = await acceptedCreate(api.app, api.tenantA, {
      template: 'base',
      resources: RESOURCES,
    });
    const done = await awaitOperation(api.app, api.tenantA, created.id);
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    const sandbox = await api.stack.store.getSandboxById(created.sandbox_id);
    expect(sandbox?.pod.name).toMatch(/^warm-base-/);
    const pod = await real.adminCore.readNamespacedPod({ name: sandbox!.pod.name!, namespace });
    expect(pod.metadata?.labels?.[POD_LABELS.sandboxId]).toBe(sandbox?.id);
    expect(pod.status?.podIP).toBe(sandbox?.pod.ip);
    // The pool refills.
    await waitUntil(async () => (await readyWarmPods()) === 4, { timeoutMs: 120_000 });
  });

  it('gives each of 4 ready pods to one of 12 concurrent creates; the other 8 go cold', async () => {
    await waitUntil(async () => (await readyWarmPods()) === 4, { timeoutMs: 120_000 });
    await api.stack.temporal.client.workflow
      .getHandle(warmPoolWorkflowId(api.stack.taskQueue, 'base'))
      .terminate('the test counts claims of a fixed pool');
    const accepted = await Promise.all(
      Array.from({ length: 12 }, () =>
        request(api.app)
          .post('/v1/sandboxes')
          .set(bearer(api.tenantB))
          .send({ template: 'base', resources: RESOURCES }),
      ),
    );
    const sandboxes = await Promise.all(
      accepted.map(async (response) => {
        expect(response.status, response.text).toBe(202);
        const done = await awaitOperation(api.app, api.tenantB, response.body.id as string);
        expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
        return (await api.stack.store.getSandboxById(response.body.sandbox_id as string))!;
      }),
    );
    const warm = sandboxes.filter((s) => s.pod.name?.startsWith('warm-base-'));
    expect(warm).toHaveLength(4);
    expect(new Set(warm.map((s) => s.pod.uid)).size).toBe(4);
    expect(sandboxes.filter((s) => s.pod.name === podNameFor(s.id, 1))).toHaveLength(8);
    expect(await readyWarmPods()).toBe(0);
  }, 300_000);
});
