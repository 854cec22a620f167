/**
 * Warm pools (docs/architecture.md, "Warm pools"), against the dev server and the simulated
 * cluster over HTTP: a matching create claims a ready pod and runs without a pod create or a
 * readiness wait, reading its sandbox once and writing its pod and mark in one store call; other
 * resources go cold; the pool refills; a shrink deletes the surplus; a pool
 * whose image the node refuses stops making pods and says why; 100 concurrent creates against a
 * pool of 20 claim exactly 20 pods, each once.
 */
import { randomBytes } from 'node:crypto';
import { Context } from '@temporalio/activity';
import request from 'supertest';
import type { Express } from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  WARM_POOL_CHANGED_SIGNAL,
  WARM_POOL_COALESCE_MS,
  warmPoolWorkflowId,
} from '../contract/index.js';
import { podNameFor, POD_LABELS } from '../src/kubernetes/pod-spec.js';
import { warmPodManifest } from '../src/kubernetes/warm-pods.js';
import type { Store } from '../src/store/index.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  startApiStack,
  type ApiStack,
} from './support/api.js';
import { eventTimeMs } from './support/history-event-time.js';
import { waitUntil } from '../tools/wait-until.js';

const ADMIN_TOKEN = 'operator-token-for-warm-pools';
const operator = { Authorization: `Bearer ${ADMIN_TOKEN}` };
// Workflow ids are per task queue and template; templates are unique per run all the same.
const suffix = randomBytes(3).toString('hex');
const POOLED = `pooled-${suffix}`;
const REFUSED = `refused-${suffix}`;
const BURST = `burst-${suffix}`;
const WAKE = `wake-${suffix}`;
const POOL_RESOURCES = { cpu: 1, memory_mib: 256, disk_mib: 2048 };

const TEMPLATES = {
  base: { image: 'ghcr.io/durable-sandbox/base:1' },
  [POOLED]: {
    image: 'ghcr.io/durable-sandbox/base:1',
    warm_pool: { size: 3, resources: POOL_RESOURCES },
  },
  [REFUSED]: {
    image: 'ghcr.io/durable-sandbox/big:1',
    warm_pool: { size: 2, resources: { ...POOL_RESOURCES, disk_mib: 300 } },
  },
  [BURST]: {
    image: 'ghcr.io/durable-sandbox/burst:1',
    warm_pool: { size: 20, resources: POOL_RESOURCES },
  },
  [WAKE]: {
    image: 'ghcr.io/durable-sandbox/wake:1',
    warm_pool: { size: 24, resources: POOL_RESOURCES },
  },
};

/** The store calls of `claimWarmPod` steps, in order: method and sandbox id. */
const claimStoreCalls: Array<{ method: string; sandboxId: string }> = [];

/** The activities' store (the real one), noting the calls a `claimWarmPod` step makes. */
function notingClaimCalls(store: Store): Store {
  const note = (method: string, sandboxId: string) => {
    let activityType: string | undefined;
    try {
      activityType = Context.current().info.activityType;
    } catch {
      return; // Not in an activity.
    }
    if (activityType === 'claimWarmPod') claimStoreCalls.push({ method, sandboxId });
  };
  return {
    ...store,
    getSandboxById(id) {
      note('getSandboxById', id);
      return store.getSandboxById(id);
    },
    recordPod(input) {
      note('recordPod', input.sandboxId);
      return store.recordPod(input);
    },
    markSandboxRunning(input) {
      note('markSandboxRunning', input.sandboxId);
      return store.markSandboxRunning(input);
    },
  };
}

let api: ApiStack;
let app: Express;
beforeAll(async () => {
  api = await startApiStack({
    env: { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) },
    stack: {
      cluster: {
        startupDelayMs: 50,
        refusalBackoffMs: 200,
        rootfsMib: { base: 451, [POOLED]: 451, [REFUSED]: 451, [BURST]: 451, [WAKE]: 451 },
      },
      activityStore: notingClaimCalls,
    },
  });
  app = api.appWith({ ADMIN_TOKENS: `ops:${ADMIN_TOKEN}` });
}, 180_000);
afterAll(async () => {
  await api?.stop();
});

interface PoolBody {
  template: string;
  spec: { size: number; size_from: string };
  status: {
    ready: number;
    pending: number;
    claimed: number;
    back_off: { reason: string; until: string } | null;
  };
}

async function pool(template: string): Promise<PoolBody> {
  const response = await request(app).get(`/admin/v1/warm-pools/${template}`).set(operator);
  expect(response.status, response.text).toBe(200);
  return response.body as PoolBody;
}

/** The template's unclaimed pods on the simulated apiserver (not being deleted). */
async function warmPods(template: string) {
  const list = await api.stack.kubernetes.core.listNamespacedPod({
    namespace: api.stack.namespace,
    labelSelector: `${POD_LABELS.warmPool}=${template}`,
  });
  return list.items.filter((pod) => !pod.metadata?.deletionTimestamp);
}

async function readyWarmPods(template: string): Promise<number> {
  return (await warmPods(template)).filter((pod) => pod.status?.podIP).length;
}

/** Creates a sandbox and waits for its operation; returns the sandbox as GET shows it. */
async function create(template: string, resources = POOL_RESOURCES) {
  const created = await acceptedCreate(app, api.tenantA, { template, resources });
  const done = await awaitOperation(app, api.tenantA, created.id);
  expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
  const sandbox = await request(app)
    .get(`/v1/sandboxes/${created.sandbox_id}`)
    .set(bearer(api.tenantA));
  return {
    operationId: created.id,
    ...(sandbox.body as {
      id: string;
      state: string;
      pod: { name: string; uid: string; ip: string };
    }),
  };
}

async function activityTypesOf(operationId: string): Promise<string[]> {
  const handle = api.stack.temporal.client.workflow.getHandle(operationId);
  const events = (await handle.fetchHistory()).events ?? [];
  return events.flatMap((event) => {
    const name = event.activityTaskScheduledEventAttributes?.activityType?.name;
    return name ? [name] : [];
  });
}

describe('a warm pool', () => {
  it('fills to its size at start and shows it on the operator route', async () => {
    await waitUntil(async () => (await readyWarmPods(POOLED)) === 3, { timeoutMs: 60_000 });
    await waitUntil(async () => (await pool(POOLED)).status.ready === 3, { timeoutMs: 60_000 });
    const body = await pool(POOLED);
    expect(body.spec).toMatchObject({ size: 3, size_from: 'template' });
  });

  it('claims reading its sandbox once, and records the pod and the mark in one store write', async () => {
    await waitUntil(async () => (await readyWarmPods(POOLED)) === 3, { timeoutMs: 60_000 });
    const sandbox = await create(POOLED);
    expect(sandbox.pod.name).toMatch(new RegExp(`^warm-${POOLED}-`));
    // The tenant before the claim; then one transaction that answers the sandbox it left.
    const calls = claimStoreCalls.filter((call) => call.sandboxId === sandbox.id);
    expect(calls.map((call) => call.method)).toEqual(['getSandboxById', 'markSandboxRunning']);
  });

  it('hands a matching create a ready pod: running with no pod create and no readiness wait', async () => {
    await waitUntil(async () => (await readyWarmPods(POOLED)) === 3, { timeoutMs: 60_000 });
    const sandbox = await create(POOLED);
    expect(sandbox.state).toBe('running');
    expect(sandbox.pod.name).toMatch(new RegExp(`^warm-${POOLED}-`));
    const types = await activityTypesOf(sandbox.operationId);
    expect(types).toContain('claimWarmPod');
    expect(types).not.toContain('createPod');
    expect(types).not.toContain('awaitPodReady');
    // The pod is the sandbox's now: labelled with its id, out of the pool.
    const pod = await api.stack.kubernetes.core.readNamespacedPod({
      name: sandbox.pod.name,
      namespace: api.stack.namespace,
    });
    expect(pod.metadata?.labels?.[POD_LABELS.sandboxId]).toBe(sandbox.id);
    expect(pod.metadata?.labels?.[POD_LABELS.warmPool]).toBeUndefined();
    expect(pod.metadata?.uid).toBe(sandbox.pod.uid);
    // No pod was made under the sandbox's own name.
    const ownPodPosts = api.stack.cluster.requestsWhere({
      verb: 'create',
      resource: 'pods',
      status: 201,
    });
    expect(ownPodPosts.map((r) => r.bodyName)).not.toContain(podNameFor(sandbox.id, 1));
    // A claimed sandbox is deleted like any other: its pod goes, by uid.
    const deleted = await request(app)
      .delete(`/v1/sandboxes/${sandbox.id}`)
      .set(bearer(api.tenantA));
    expect(deleted.status, deleted.text).toBe(202);
    const gone = await awaitOperation(app, api.tenantA, deleted.body.id as string);
    expect(gone.status, JSON.stringify(gone.error)).toBe('succeeded');
    const podDeletes = api.stack.cluster.requestsWhere({
      verb: 'delete',
      resource: 'pods',
      name: sandbox.pod.name,
    });
    expect(
      podDeletes.map(
        (r) => (r.deleteOptions as { preconditions?: { uid?: string } })?.preconditions?.uid,
      ),
    ).toContain(sandbox.pod.uid);
  });

  it('refills to its size after a claim', async () => {
    await create(POOLED);
    await waitUntil(async () => (await readyWarmPods(POOLED)) === 3, { timeoutMs: 60_000 });
    expect((await pool(POOLED)).status.claimed).toBeGreaterThanOrEqual(2);
  });

  it("shows tenants the pool's resources in the template catalog, and null without a pool", async () => {
    const pooled = await request(app).get(`/v1/templates/${POOLED}`).set(bearer(api.tenantA));
    expect(pooled.status, pooled.text).toBe(200);
    expect(pooled.body.warm_pool).toEqual({ resources: POOL_RESOURCES });
    const base = await request(app).get('/v1/templates/base').set(bearer(api.tenantA));
    expect(base.body.warm_pool).toBeNull();
  });

  it('sends a create with other resources cold', async () => {
    const sandbox = await create(POOLED, { ...POOL_RESOURCES, disk_mib: 4096 });
    expect(sandbox.pod.name).toBe(podNameFor(sandbox.id, 1));
    const types = await activityTypesOf(sandbox.operationId);
    expect(types).toContain('createPod');
    expect(types).not.toContain('claimWarmPod');
  });

  it('deletes the surplus when scaled down, and grows again when scaled up, without a restart', async () => {
    const down = await request(app)
      .put(`/admin/v1/warm-pools/${POOLED}/scale`)
      .set(operator)
      .send({ size: 1 });
    expect(down.status, down.text).toBe(200);
    expect(down.body.spec).toMatchObject({ size: 1, size_from: 'scale' });
    await waitUntil(async () => (await warmPods(POOLED)).length === 1, { timeoutMs: 60_000 });
    const up = await request(app)
      .put(`/admin/v1/warm-pools/${POOLED}/scale`)
      .set(operator)
      .send({ size: null });
    expect(up.status, up.text).toBe(200);
    expect(up.body.spec).toMatchObject({ size: 3, size_from: 'template' });
    await waitUntil(async () => (await readyWarmPods(POOLED)) === 3, { timeoutMs: 60_000 });
  });

  it('refuses a scale beyond the limit, and answers 404 for a template without a pool', async () => {
    const tooBig = await request(app)
      .put(`/admin/v1/warm-pools/${POOLED}/scale`)
      .set(operator)
      .send({ size: 100_000 });
    expect(tooBig.status).toBe(400);
    expect(tooBig.body.error.message).toMatch(/^size must be an integer from 0 to 500/);
    const none = await request(app).get('/admin/v1/warm-pools/base').set(operator);
    expect(none.status).toBe(404);
    const tenant = await request(app)
      .get(`/admin/v1/warm-pools/${POOLED}`)
      .set(bearer(api.tenantA));
    expect(tenant.status).toBe(401);
  });

  it('never counts, claims or deletes a pod it did not make', async () => {
    // Someone else who may create pods in the namespace plants one with the pool's label, made
    // exactly as the pool makes its pods (another installation's, or an attacker's).
    const planted = await api.stack.kubernetes.core.createNamespacedPod({
      namespace: api.stack.namespace,
      body: warmPodManifest({
        template: POOLED,
        image: 'ghcr.io/durable-sandbox/base:1',
        resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
      }),
    });
    const name = planted.metadata!.name!;
    await waitUntil(async () =>
      (await warmPods(POOLED)).some((pod) => pod.status?.podIP && pod.metadata?.name === name),
    );
    // The pool shrinks to nothing: its own pods go, the planted one stays, uncounted.
    const empty = await request(app)
      .put(`/admin/v1/warm-pools/${POOLED}/scale`)
      .set(operator)
      .send({ size: 0 });
    expect(empty.status, empty.text).toBe(200);
    await waitUntil(async () => (await warmPods(POOLED)).length === 1, { timeoutMs: 60_000 });
    expect((await warmPods(POOLED))[0]?.metadata?.name).toBe(name);
    await waitUntil(async () => (await pool(POOLED)).status.ready === 0, { timeoutMs: 30_000 });
    // The planted pod is the only ready pod with the pool's label: a create goes cold.
    const sandbox = await create(POOLED);
    expect(sandbox.pod.name).toBe(podNameFor(sandbox.id, 1));
    const touched = api.stack.cluster.requestsWhere({
      verb: ['update', 'delete'],
      resource: 'pods',
      name,
    });
    expect(touched).toHaveLength(0);
    await api.stack.kubernetes.core.deleteNamespacedPod({ name, namespace: api.stack.namespace });
    const back = await request(app)
      .put(`/admin/v1/warm-pools/${POOLED}/scale`)
      .set(operator)
      .send({ size: null });
    expect(back.status, back.text).toBe(200);
    await waitUntil(async () => (await readyWarmPods(POOLED)) === 3, { timeoutMs: 60_000 });
  });

  it('never lists a warm pod as a tenant sandbox', async () => {
    const list = await request(app).get('/v1/sandboxes').set(bearer(api.tenantA));
    const names = (list.body.sandboxes as Array<{ pod: { name: string | null } }>).map(
      (s) => s.pod.name,
    );
    const unclaimed = (await warmPods(POOLED)).map((pod) => pod.metadata?.name);
    expect(unclaimed.length).toBeGreaterThan(0);
    for (const name of unclaimed) expect(names).not.toContain(name);
  });
});

describe('a warm pool whose image the node refuses', () => {
  it('learns the floor, stops making pods and says why', async () => {
    await waitUntil(async () => (await pool(REFUSED)).status.back_off !== null, {
      timeoutMs: 60_000,
    });
    const body = await pool(REFUSED);
    expect(body.status.back_off?.reason).toMatch(
      /rootfs floor \(451 MiB\) is above the pool's disk_mib \(300 MiB\)/,
    );
    const floors = await request(app).get('/admin/v1/rootfs-floors').set(operator);
    expect(floors.body.floors).toContainEqual(
      expect.objectContaining({ image: 'ghcr.io/durable-sandbox/big:1', rootfs_mib: 451 }),
    );
    await waitUntil(async () => (await warmPods(REFUSED)).length === 0, { timeoutMs: 30_000 });
    // What the apiserver saw: after the floor, no more pods of the pool are made.
    const madeBefore = poolPodCreates(REFUSED);
    const wake = await request(app)
      .put(`/admin/v1/warm-pools/${REFUSED}/scale`)
      .set(operator)
      .send({ size: 3 });
    expect(wake.status, wake.text).toBe(200);
    await waitUntil(async () => (await pool(REFUSED)).spec.size === 3);
    // Two reconciles after the signal (each records a status with observed_at).
    const observed = (await request(app).get(`/admin/v1/warm-pools/${REFUSED}`).set(operator)).body
      .status.observed_at as string;
    await waitUntil(
      async () =>
        ((await request(app).get(`/admin/v1/warm-pools/${REFUSED}`).set(operator)).body.status
          .observed_at as string) > observed,
      { timeoutMs: 30_000 },
    );
    expect(poolPodCreates(REFUSED)).toBe(madeBefore);
    expect((await pool(REFUSED)).status.back_off?.reason).toMatch(/rootfs floor/);
  });
});

/** Pod creates of a pool the simulated apiserver answered 201. */
function poolPodCreates(template: string): number {
  return api.stack.cluster
    .requestsWhere({ verb: 'create', resource: 'pods', status: 201 })
    .filter((r) => r.name?.startsWith(`warm-${template}-`)).length;
}

describe('a warm pool under concurrent claims', () => {
  it('hands 20 pods to 20 of 100 concurrent creates, each pod once, and the other 80 go cold', async () => {
    await waitUntil(async () => (await readyWarmPods(BURST)) === 20, { timeoutMs: 90_000 });
    // No refill during the burst: exactly the 20 ready pods can be claimed.
    await api.stack.temporal.client.workflow
      .getHandle(warmPoolWorkflowId(api.stack.taskQueue, BURST))
      .terminate('the test counts claims of a fixed pool');
    const accepted = await Promise.all(
      Array.from({ length: 100 }, () =>
        request(app)
          .post('/v1/sandboxes')
          .set(bearer(api.tenantB))
          .send({ template: BURST, resources: POOL_RESOURCES }),
      ),
    );
    for (const response of accepted) expect(response.status, response.text).toBe(202);
    const sandboxes = await Promise.all(
      accepted.map(async (response) => {
        const done = await awaitOperation(app, api.tenantB, response.body.id as string);
        expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
        return (await api.stack.store.getSandboxById(response.body.sandbox_id as string))!;
      }),
    );
    const warm = sandboxes.filter((s) => s.pod.name?.startsWith(`warm-${BURST}-`));
    expect(warm).toHaveLength(20);
    expect(new Set(warm.map((s) => s.pod.uid)).size).toBe(20);
    expect(new Set(sandboxes.map((s) => s.pod.uid)).size).toBe(100);
    // Each claimed pod is labelled with exactly the sandbox that recorded it.
    for (const sandbox of warm) {
      const pod = await api.stack.kubernetes.core.readNamespacedPod({
        name: sandbox.pod.name!,
        namespace: api.stack.namespace,
      });
      expect(pod.metadata?.labels?.[POD_LABELS.sandboxId]).toBe(sandbox.id);
    }
    expect(sandboxes.filter((s) => s.pod.name === podNameFor(s.id, 1))).toHaveLength(80);
    expect(await warmPods(BURST)).toHaveLength(0);
  }, 300_000);
});

/**
 * The `warmPoolChanged` signals the pool's workflow received, as the history of its run holds
 * them (a pool continues as new only after 500 reconciles: one run here).
 */
async function poolSignals(template: string): Promise<number> {
  const history = await api.stack.temporal.client.workflow
    .getHandle(warmPoolWorkflowId(api.stack.taskQueue, template))
    .fetchHistory();
  return (history.events ?? []).filter(
    (e) => e.workflowExecutionSignaledEventAttributes?.signalName === WARM_POOL_CHANGED_SIGNAL,
  ).length;
}

describe('a warm pool woken by a burst of claims', () => {
  it('gets one signal per window from the worker, not one per claim, and still refills', async () => {
    await waitUntil(async () => (await readyWarmPods(WAKE)) === 24, { timeoutMs: 90_000 });
    const before = await poolSignals(WAKE);
    const claims = await Promise.all(
      // Half the pool: each claim finds a ready pod within its tries.
      Array.from({ length: 12 }, () =>
        acceptedCreate(app, api.tenantA, { template: WAKE, resources: POOL_RESOURCES }),
      ),
    );
    // When each claim ran, as the server recorded it: its signal was sent in between.
    const spans = await Promise.all(
      claims.map(async (created) => {
        const done = await awaitOperation(app, api.tenantA, created.id);
        expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
        const events =
          (await api.stack.temporal.client.workflow.getHandle(created.id).fetchHistory()).events ??
          [];
        const claim = events.findIndex(
          (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'claimWarmPod',
        );
        expect(claim, 'every create claimed').toBeGreaterThanOrEqual(0);
        const started = events.slice(claim).find((e) => e.activityTaskStartedEventAttributes);
        const completed = events.slice(claim).find((e) => e.activityTaskCompletedEventAttributes);
        return { from: eventTimeMs(started), to: eventTimeMs(completed) };
      }),
    );
    const sandboxes = await Promise.all(
      claims.map(async (c) => (await api.stack.store.getSandboxById(c.sandbox_id))!),
    );
    expect(sandboxes.filter((s) => s.pod.name?.startsWith(`warm-${WAKE}-`))).toHaveLength(12);
    // The pool refills: no claim's refill was lost with its signal.
    await waitUntil(async () => (await readyWarmPods(WAKE)) === 24, { timeoutMs: 90_000 });
    // Signals at least WARM_POOL_COALESCE_MS apart, all sent while some claim ran: at most one
    // per window the claims spanned, whatever the runner's load. One per claim would be 12.
    const spanMs = Math.max(...spans.map((s) => s.to)) - Math.min(...spans.map((s) => s.from));
    const bound = Math.floor(spanMs / WARM_POOL_COALESCE_MS) + 1;
    const signals = (await poolSignals(WAKE)) - before;
    expect(signals, `claims spanned ${Math.round(spanMs)} ms`).toBeGreaterThanOrEqual(1);
    expect(signals, `claims spanned ${Math.round(spanMs)} ms`).toBeLessThanOrEqual(bound);
  }, 300_000);
});
