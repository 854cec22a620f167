/**
 * Tenant limits (docs/api.md, "Tenant limits") through the API over a real dev server, a worker
 * and the simulated cluster: each limit refuses with 429, `Retry-After` and details naming the
 * limit, the tenant's own usage and the limit's value; a refused create leaves nothing behind
 * (no sandbox, operation or idempotency key in the store, no workflow, no pod); a share that
 * ends is usable at once; `GET /v1/quota` and the refusal metric.
 */
import { randomUUID } from 'node:crypto';
import type { Express } from 'express';
import request from 'supertest';
import type { Store } from '../src/store/index.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { apiRegistry } from '../src/api/metrics.js';
import {
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
  type OperationBody,
  type TestTenant,
} from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
});
afterAll(async () => {
  await api?.stop();
});

/** Limits as TENANT_LIMITS spells them. */
type Limits = Partial<
  Record<
    | 'sandboxes'
    | 'cpu'
    | 'memory_mib'
    | 'disk_mib'
    | 'creates_per_second'
    | 'create_burst'
    | 'waits',
    number
  >
>;

/**
 * A tenant of its own (so no other test's sandboxes count) with `limits`, and an app whose
 * TENANT_LIMITS gives it them; suite tenant B keeps the defaults.
 */
function tenantWith(
  limits: Limits,
  env: Record<string, string> = {},
): { who: TestTenant; app: Express } {
  const id = `q-${randomUUID().slice(0, 12)}`;
  const who = { id, token: `token-${id}` };
  const app = api.appWith({
    API_TOKENS: `${id}:${who.token},${api.tenantB.id}:${api.tenantB.token}`,
    TENANT_LIMITS: JSON.stringify({ tenants: { [id]: limits } }),
    ...env,
  });
  return { who, app };
}

function create(app: Express, who: TestTenant, body: object = createBody(2048), key?: string) {
  const req = request(app).post('/v1/sandboxes').set(bearer(who));
  return (key ? req.set('Idempotency-Key', key) : req).send(body);
}

const podCreates = () =>
  api.stack.cluster.requestsWhere({ verb: 'create', resource: 'pods', namespace: 'sandboxes' })
    .length;

/** The create workflows visibility lists for the tenant. */
async function createWorkflowsOf(tenant: string): Promise<string[]> {
  const ids: string[] = [];
  for await (const execution of api.stack.temporal.client.workflow.list({
    query: `TenantId = '${tenant}' AND WorkflowType = 'createSandbox'`,
  })) {
    ids.push(execution.workflowId);
  }
  return ids.sort();
}

/** The tenant's sandboxes and operations as the store has them. */
async function storedOf(tenant: string) {
  const sandboxes = await api.stack.store.listSandboxes(tenant, { limit: 100 });
  const operations = await api.stack.store.listOperations(tenant, { limit: 100 });
  return {
    sandboxes: sandboxes.sandboxes.map((s) => s.id).sort(),
    operations: operations.operations.map((o) => o.id).sort(),
  };
}

/**
 * Proves the refused creates started no workflow: deletes `accepted`'s sandbox (freeing the
 * share), sends one more create, waits until visibility lists it, then expects exactly
 * `accepted` and it. A refused create's workflow, had one started before, would be listed by then.
 */
async function expectOnlyCreateWorkflows(
  app: Express,
  who: TestTenant,
  accepted: OperationBody,
): Promise<void> {
  await awaitOperation(app, who, accepted.id);
  const deleted = await request(app)
    .delete(`/v1/sandboxes/${accepted.sandbox_id}`)
    .set(bearer(who));
  expect(deleted.status, deleted.text).toBe(202);
  await awaitOperation(app, who, deleted.body.id);
  const control = await create(app, who);
  expect(control.status, control.text).toBe(202);
  const listed = await waitUntil(
    async () => {
      const ids = await createWorkflowsOf(who.id);
      return ids.includes(control.body.id) ? ids : undefined;
    },
    { what: `workflow ${control.body.id} in visibility` },
  );
  expect(listed).toEqual([accepted.id, control.body.id].sort());
  await awaitOperation(app, who, control.body.id);
}

describe('held limits: sandboxes, cpu, memory_mib, disk_mib', () => {
  it.each([
    {
      limit: 'sandboxes',
      limits: { sandboxes: 1 },
      first: createBody(2048),
      second: createBody(2048),
      details: { usage: 1, requested: 1, limit_value: 1 },
    },
    {
      limit: 'cpu',
      limits: { cpu: 1.5 },
      first: { template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 } },
      second: { template: 'base', resources: { cpu: '750m', memory_mib: 256, disk_mib: 2048 } },
      details: { usage: 1, requested: 0.75, limit_value: 1.5 },
    },
    {
      limit: 'memory_mib',
      limits: { memory_mib: 1000 },
      first: { template: 'base', resources: { cpu: 1, memory_mib: 600, disk_mib: 2048 } },
      second: { template: 'base', resources: { cpu: 1, memory_mib: 401, disk_mib: 2048 } },
      details: { usage: 600, requested: 401, limit_value: 1000 },
    },
    {
      limit: 'disk_mib',
      limits: { disk_mib: 4000 },
      first: { template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 } },
      second: { template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: 2000 } },
      details: { usage: 2048, requested: 2000, limit_value: 4000 },
    },
  ])(
    'refuses a create past $limit with 429 quota_exceeded naming its own usage, and leaves nothing behind',
    async ({ limit, limits, first, second, details }) => {
      const { who, app } = tenantWith(limits);
      // Another tenant's sandbox: its figures must never show in this tenant's refusal.
      const other = await create(api.app, api.tenantB);
      expect(other.status, other.text).toBe(202);

      const accepted = await create(app, who, first);
      expect(accepted.status, accepted.text).toBe(202);
      // Both pods made before counting, so only a pod of the refused create could add one.
      await awaitOperation(app, who, accepted.body.id);
      await awaitOperation(api.app, api.tenantB, other.body.id);
      const storedBefore = await storedOf(who.id);
      const podsBefore = podCreates();

      const key = `key-${randomUUID()}`;
      const refused = await create(app, who, second, key);
      expect(refused.status, refused.text).toBe(429);
      expect(refused.headers['retry-after']).toBe('30');
      expect(refused.body.error.code).toBe('quota_exceeded');
      expect(refused.body.error.details).toEqual({ limit, ...details });
      expect(refused.body.error.message).toContain(`limit of ${details.limit_value}`);

      // Nothing behind: no row, no operation, the key unclaimed, no pod.
      expect(await storedOf(who.id)).toEqual(storedBefore);
      expect(await api.stack.store.findIdempotencyKey(who.id, key)).toBeUndefined();
      expect(podCreates()).toBe(podsBefore);
      await expectOnlyCreateWorkflows(app, who, accepted.body as OperationBody);
    },
  );

  it('does not consume the Idempotency-Key of a refused create: the same key creates once the share is free', async () => {
    const { who, app } = tenantWith({ sandboxes: 1 });
    const first = await request(app)
      .post('/sync/v1/sandboxes')
      .set(bearer(who))
      .send(createBody(2048));
    expect(first.status, first.text).toBe(201);
    const key = `key-${randomUUID()}`;
    const refused = await create(app, who, createBody(2048), key);
    expect(refused.status, refused.text).toBe(429);

    const deleted = await request(app).delete(`/v1/sandboxes/${first.body.id}`).set(bearer(who));
    await awaitOperation(app, who, deleted.body.id);
    const again = await create(app, who, createBody(2048), key);
    expect(again.status, again.text).toBe(202);
    const replay = await create(app, who, createBody(2048), key);
    expect(replay.status, replay.text).toBe(202);
    expect(replay.body.id).toBe(again.body.id);
    await awaitOperation(app, who, again.body.id);
  });
});

/**
 * Fills a tenant's one sandbox share with a running sandbox (a synchronous create) and checks
 * the next create is refused 429.
 * @returns the synchronous create's answer (its body the running sandbox)
 */
async function holdTheOneShare(app: Express, who: TestTenant) {
  const first = await request(app)
    .post('/sync/v1/sandboxes')
    .set(bearer(who))
    .send(createBody(2048));
  expect(first.status, first.text).toBe(201);
  expect((await create(app, who)).status).toBe(429);
  return first;
}

describe('a share that ends is free at once', () => {
  it('a deleted sandbox frees its share for the next create', async () => {
    const { who, app } = tenantWith({ sandboxes: 1 });
    const first = await holdTheOneShare(app, who);

    const deleted = await request(app).delete(`/v1/sandboxes/${first.body.id}`).set(bearer(who));
    expect(deleted.status, deleted.text).toBe(202);
    await awaitOperation(app, who, deleted.body.id);
    const next = await create(app, who);
    expect(next.status, next.text).toBe(202);
    await awaitOperation(app, who, next.body.id);
  });

  it('a failed create frees its share for the next create', async () => {
    const { who, app } = tenantWith({ sandboxes: 1 });
    // 300 MiB is below base's 451 MiB root filesystem: the node refuses it.
    const failing = await create(app, who, createBody(300));
    expect(failing.status, failing.text).toBe(202);
    const failed = await awaitOperation(app, who, failing.body.id);
    expect(failed.error?.code).toBe('invalid_request');
    // The API may now know the floor; a create above it is the next one.
    const next = await create(app, who);
    expect(next.status, next.text).toBe(202);
    await awaitOperation(app, who, next.body.id);
  });

  it('a lost sandbox frees its share for the next create', async () => {
    const { who, app } = tenantWith({ sandboxes: 1 });
    const first = await holdTheOneShare(app, who);
    // What the worker's orphan sweep does when the pod is gone (src/worker/orphan-sweeper.ts).
    const lost = await api.stack.store.markSandboxLost({
      sandboxId: first.body.id,
      podUid: first.body.pod.uid,
      reason: 'the pod is gone',
    });
    expect(lost).toBe(true);
    const next = await create(app, who);
    expect(next.status, next.text).toBe(202);
    await awaitOperation(app, who, next.body.id);
  });
});

describe('the create rate and the waits: creates_per_second, waits', () => {
  it('refuses creates past the bucket with 429 rate_limited and Retry-After, starting nothing', async () => {
    const { who, app } = tenantWith({ creates_per_second: 1, create_burst: 2 });
    const podsBefore = podCreates();
    // At once (well within the second a token takes to refill): the bucket's 2 tokens admit 2.
    const answers = await Promise.all(Array.from({ length: 5 }, () => create(app, who)));
    const statuses = answers.map((a) => a.status).sort();
    expect(statuses).toEqual([202, 202, 429, 429, 429]);
    for (const refused of answers.filter((a) => a.status === 429)) {
      // A token refills in 1 s at 1/s: the whole seconds until then.
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.body.error.code).toBe('rate_limited');
      // usage: the admitted creates the bucket has not refilled, not the attempts.
      expect(refused.body.error.details).toEqual({
        limit: 'creates_per_second',
        usage: 2,
        limit_value: 1,
        burst: 2,
      });
    }
    const accepted = answers.filter((a) => a.status === 202);
    for (const one of accepted) await awaitOperation(app, who, one.body.id);
    expect((await storedOf(who.id)).operations).toHaveLength(2);
    expect(podCreates() - podsBefore).toBe(2);
  });

  it('a replica that saw the bucket empty refuses until its refill time without asking the store, then admits', async () => {
    const id = `q-${randomUUID().slice(0, 12)}`;
    const who = { id, token: `token-${id}` };
    let storeCreates = 0;
    const counting: Store = {
      ...api.stack.store,
      createSandbox(input) {
        storeCreates += 1;
        return api.stack.store.createSandbox(input);
      },
    };
    const app = api.appWith(
      {
        API_TOKENS: `${id}:${who.token}`,
        TENANT_LIMITS: JSON.stringify({
          tenants: { [id]: { creates_per_second: 1, create_burst: 1 } },
        }),
      },
      { store: counting },
    );
    expect((await create(app, who)).status).toBe(202);
    const first = await create(app, who);
    expect(first.status, first.text).toBe(429);
    const asked = storeCreates;
    // The store said: no token for about a second. Until then this replica knows without asking.
    const refused = await Promise.all(Array.from({ length: 10 }, () => create(app, who)));
    for (const answer of refused) {
      expect(answer.status).toBe(429);
      expect(answer.headers['retry-after']).toBe('1');
      expect(answer.body.error.details).toMatchObject({ limit: 'creates_per_second', usage: 1 });
    }
    expect(storeCreates).toBe(asked);
    // Once the bucket refilled, the store decides again and admits.
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    const later = await create(app, who);
    expect(later.status, later.text).toBe(202);
    expect(storeCreates).toBe(asked + 1);
  });

  it('refuses a long-poll and a synchronous create past waits with 429 rate_limited, creating nothing', async () => {
    const { who, app } = tenantWith({ waits: 1 });
    api.stack.cluster.faults.neverReady(true);
    const server = await api.listen(app);
    const held = new AbortController();
    try {
      const accepted = await create(app, who);
      expect(accepted.status, accepted.text).toBe(202);
      await awaitOperation(app, who, accepted.body.id, {
        until: (op) => op.phase === 'waiting_for_ip',
      });
      // One long-poll holds the tenant's only wait.
      const polling = fetch(`${server.url}/v1/operations/${accepted.body.id}?wait=30s`, {
        headers: bearer(who),
        signal: held.signal,
      }).catch(() => undefined);
      await waitUntil(
        async () => {
          const quota = await request(app).get('/v1/quota').set(bearer(who));
          return quota.body.usage.waits === 1;
        },
        { what: 'the long-poll holding a wait' },
      );

      const poll = await request(app)
        .get(`/v1/operations/${accepted.body.id}?wait=5s`)
        .set(bearer(who));
      expect(poll.status, poll.text).toBe(429);
      expect(poll.headers['retry-after']).toBe('1');
      expect(poll.body.error).toMatchObject({
        code: 'rate_limited',
        details: { limit: 'waits', usage: 1, limit_value: 1 },
      });
      // A plain GET holds no wait.
      expect(
        (await request(app).get(`/v1/operations/${accepted.body.id}`).set(bearer(who))).status,
      ).toBe(200);

      const storedBefore = await storedOf(who.id);
      const podsBefore = podCreates();
      const sync = await request(app)
        .post('/sync/v1/sandboxes')
        .set(bearer(who))
        .send(createBody(2048));
      expect(sync.status, sync.text).toBe(429);
      expect(sync.body.error.details).toMatchObject({ limit: 'waits', usage: 1, limit_value: 1 });
      expect(await storedOf(who.id)).toEqual(storedBefore);
      expect(podCreates()).toBe(podsBefore);

      held.abort();
      await polling;
      await waitUntil(async () => {
        const quota = await request(app).get('/v1/quota').set(bearer(who));
        return quota.body.usage.waits === 0;
      });
      const cancel = await request(app)
        .post(`/v1/operations/${accepted.body.id}/cancel`)
        .set(bearer(who));
      expect(cancel.status, cancel.text).toBe(202);
      await awaitOperation(app, who, accepted.body.id);
    } finally {
      held.abort();
      api.stack.cluster.faults.neverReady(false);
      await server.close();
    }
  });
});

describe('GET /v1/quota and the refusal metric', () => {
  it("shows the tenant its own limits and usage, never another tenant's", async () => {
    const { who, app } = tenantWith({ sandboxes: 3, cpu: 8, creates_per_second: 5 });
    const empty = await request(app).get('/v1/quota').set(bearer(who));
    expect(empty.status, empty.text).toBe(200);
    expect(empty.body).toEqual({
      tenant: who.id,
      limits: {
        sandboxes: 3,
        cpu: 8,
        // The fields its entry leaves out: the built-in defaults, a shared installation's.
        memory_mib: 81920,
        disk_mib: 409600,
        creates_per_second: 5,
        create_burst: 10,
        waits: 100,
      },
      usage: { sandboxes: 0, cpu: 0, memory_mib: 0, disk_mib: 0, waits: 0 },
    });
    const accepted = await create(app, who, {
      template: 'base',
      resources: { cpu: '500m', memory_mib: 512, disk_mib: 2048 },
    });
    expect(accepted.status, accepted.text).toBe(202);
    const used = await request(app).get('/v1/quota').set(bearer(who));
    expect(used.body.usage).toEqual({
      sandboxes: 1,
      cpu: 0.5,
      memory_mib: 512,
      disk_mib: 2048,
      waits: 0,
    });
    // Tenant B (the built-in defaults) sees its own figures only.
    const other = await request(app).get('/v1/quota').set(bearer(api.tenantB));
    expect(other.body.tenant).toBe(api.tenantB.id);
    expect(other.body.limits.sandboxes).toBe(20);
    await awaitOperation(app, who, accepted.body.id);
  });

  it('counts refusals by limit, with a tenant label only when QUOTA_METRICS_TENANT_LABEL is on', async () => {
    const count = async (name: string, labels: Record<string, string>) =>
      (await apiRegistry.getSingleMetric(name)?.get())?.values.find((v) =>
        Object.entries(labels).every(([k, value]) => v.labels[k] === value),
      )?.value ?? 0;
    const plain = 'durable_sandbox_tenant_limit_refusals_total';
    const byTenant = 'durable_sandbox_tenant_limit_refusals_by_tenant_total';

    const quiet = tenantWith({ sandboxes: 0 });
    const before = await count(plain, { limit: 'sandboxes' });
    expect((await create(quiet.app, quiet.who)).status).toBe(429);
    expect(await count(plain, { limit: 'sandboxes' })).toBe(before + 1);
    const metrics = await request(quiet.app).get('/metrics');
    expect(metrics.text).not.toContain(quiet.who.id);

    const labelled = tenantWith({ sandboxes: 0 }, { QUOTA_METRICS_TENANT_LABEL: 'true' });
    expect((await create(labelled.app, labelled.who)).status).toBe(429);
    expect(await count(byTenant, { limit: 'sandboxes', tenant: labelled.who.id })).toBe(1);
  });
});
