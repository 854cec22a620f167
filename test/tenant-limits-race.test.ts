/**
 * Tenant limits are exact across replicas (docs/api.md, "Tenant limits"): the check and the
 * insert share one transaction under the tenant's admission lock (src/store/tenant-usage.ts), so
 * creates racing through two stores on one database, or two API replicas on one PostgreSQL,
 * never take a tenant past its limit. The create rate is one token bucket in the store
 * (src/store/create-rate.ts): creates sent evenly through two stores, or two API replicas, are
 * admitted at the rate plus the burst, not at twice it.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  openStore,
  type NewSandboxInput,
  type NewSandboxOutcome,
  type Store,
} from '../src/store/index.js';
import { bearer, createBody, startApiStack, type ApiStack } from './support/api.js';
import { storeBackends, type StoreTarget } from './support/store.js';
import { ROOMY_TENANT_LIMITS } from '../tools/roomy-tenant-limits.js';
import { waitUntil } from '../tools/wait-until.js';

const RACERS = 200;
const LIMIT = 50;

/** A create of one sandbox of `tenant` with a fresh id, under `limits` and `createRate`. */
function createInput(
  tenant: string,
  extra: Pick<NewSandboxInput, 'limits' | 'createRate'>,
): NewSandboxInput {
  const id = randomUUID().replaceAll('-', '').slice(0, 20);
  return {
    id: `sbx_${id}`,
    tenant,
    template: 'base',
    resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
    operationId: `op_${id}`,
    ...extra,
  };
}

const HELD = { sandboxes: 1_000, cpu: 1_000, memoryMib: 1_000_000, diskMib: 10_000_000 };
const RATE = { perSecond: 5, burst: 10 };

describe.each(storeBackends())('two stores on one $name database', (backend) => {
  let target: StoreTarget | undefined;
  const stores: Store[] = [];
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await target?.dispose();
    target = undefined;
  });

  it(`store ${LIMIT} of ${RACERS} racing creates of one tenant against a limit of ${LIMIT}`, async () => {
    target = await backend.freshTarget();
    stores.push(await openStore(target.options), await openStore(target.options));
    const tenant = `race-${randomUUID().slice(0, 8)}`;
    const outcomes = await Promise.all(
      Array.from({ length: RACERS }, (_, i): Promise<NewSandboxOutcome> => {
        const id = randomUUID().replaceAll('-', '').slice(0, 20);
        return stores[i % 2]!.createSandbox({
          id: `sbx_${id}`,
          tenant,
          template: 'base',
          resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
          operationId: `op_${id}`,
          limits: { sandboxes: LIMIT, cpu: 1_000, memoryMib: 1_000_000, diskMib: 10_000_000 },
        });
      }),
    );
    const kinds = outcomes.map((outcome) => outcome.kind);
    expect(kinds.filter((kind) => kind === 'created')).toHaveLength(LIMIT);
    expect(kinds.filter((kind) => kind === 'refused')).toHaveLength(RACERS - LIMIT);
    expect(await stores[0]!.getTenantUsage(tenant)).toEqual({
      sandboxes: LIMIT,
      cpu: LIMIT,
      memoryMib: LIMIT * 256,
      diskMib: LIMIT * 2048,
    });
  });

  it('admit 59 of 200 creates sent 50 ms apart through both at 5/s with a burst of 10', async () => {
    target = await backend.freshTarget();
    // Each store reads the test's clock: attempt i is made at i × 50 ms, through store i % 2.
    let nowMs = Date.parse('2026-01-01T00:00:00Z');
    const clock = () => new Date(nowMs);
    stores.push(
      await openStore({ ...target.options, clock }),
      await openStore({ ...target.options, clock }),
    );
    const tenant = `rate-${randomUUID().slice(0, 8)}`;
    const kinds: string[] = [];
    for (let i = 0; i < 200; i++) {
      const outcome = await stores[i % 2]!.createSandbox(
        createInput(tenant, { limits: HELD, createRate: RATE }),
      );
      kinds.push(outcome.kind);
      if (i < 199) nowMs += 50;
    }
    // 10 at once, then 5 a second over the 9.95 s between the first and the last attempt.
    expect(kinds.filter((kind) => kind === 'created')).toHaveLength(10 + 49);
    expect(kinds.filter((kind) => kind === 'rate_limited')).toHaveLength(200 - 59);
    expect((await stores[0]!.getTenantUsage(tenant)).sandboxes).toBe(59);
    // The empty bucket refuses, naming its figures and the time until a token.
    expect(await stores[1]!.createSandbox(createInput(tenant, { createRate: RATE }))).toEqual({
      kind: 'rate_limited',
      refusal: { usage: 10, limitValue: 5, burst: 10, retryAfterMs: 50 },
    });
  });

  it('take no token for a create a held limit refuses, nor for a replay', async () => {
    target = await backend.freshTarget();
    const clock = () => new Date('2026-01-01T00:00:00Z');
    stores.push(await openStore({ ...target.options, clock }));
    const store = stores[0]!;
    const tenant = `rate-${randomUUID().slice(0, 8)}`;
    const rate = { perSecond: 1, burst: 2 };
    const full = { ...HELD, sandboxes: 0 };
    for (let i = 0; i < 5; i++) {
      const refused = await store.createSandbox(
        createInput(tenant, { limits: full, createRate: rate }),
      );
      expect(refused.kind).toBe('refused');
    }
    const keyed = {
      ...createInput(tenant, { limits: HELD, createRate: rate }),
      idempotency: { key: 'k1', requestHash: 'h1' },
    };
    expect((await store.createSandbox(keyed)).kind).toBe('created');
    expect(
      (await store.createSandbox({ ...keyed, id: 'sbx_other', operationId: 'op_other' })).kind,
    ).toBe('replay');
    // The bucket still holds the second token of its burst, and no third.
    expect((await store.createSandbox(createInput(tenant, { createRate: rate }))).kind).toBe(
      'created',
    );
    expect((await store.createSandbox(createInput(tenant, { createRate: rate }))).kind).toBe(
      'rate_limited',
    );
  });
});

describe.each(storeBackends())('two API replicas on one $name store', (backend) => {
  let api: ApiStack | undefined;
  let second: Store | undefined;
  afterAll(async () => {
    await second?.close();
    await api?.stop();
  });

  it('admit at most 10 + 5 a second of 200 creates sent evenly over 10 s at 5/s with a burst of 10', async () => {
    // No worker: the started workflows wait on the task queue; they are terminated below.
    api = await startApiStack({
      stack: {
        worker: false,
        ...(backend.name === 'postgres' ? { databaseUrl: process.env.TEST_DATABASE_URL } : {}),
      },
    });
    const tenant = api.tenantA;
    const env = {
      // Roomy but for the rate: the built-in held limits (20 sandboxes, 40 cores) would bind first.
      TENANT_LIMITS: JSON.stringify({
        default: ROOMY_TENANT_LIMITS,
        tenants: { [tenant.id]: { creates_per_second: 5, create_burst: 10 } },
      }),
    };
    second = await openStore(api.stack.storeOptions);
    // Two replicas: each its own app, its own store (its own connections), its own port.
    const replicas = [
      await api.listen(api.appWith(env)),
      await api.listen(api.appWith(env, { store: second })),
    ];
    const ATTEMPTS = 200;
    const SPAN_MS = 10_000;
    const began = Date.now();
    const answers = await Promise.all(
      Array.from({ length: ATTEMPTS }, async (_, i) => {
        // Sent evenly: attempt i at i × 50 ms, alternating replicas, whatever the answers.
        await sleep(began + (i * SPAN_MS) / ATTEMPTS - Date.now());
        const response = await fetch(`${replicas[i % 2]!.url}/v1/sandboxes`, {
          method: 'POST',
          headers: { ...bearer(tenant), 'Content-Type': 'application/json' },
          body: JSON.stringify(createBody(2048)),
        });
        return {
          status: response.status,
          retryAfter: response.headers.get('retry-after'),
          body: (await response.json()) as {
            id?: string;
            error?: { code: string; details: Record<string, unknown> };
          },
        };
      }),
    );
    const tookS = (Date.now() - began) / 1_000;
    const accepted = answers.filter((answer) => answer.status === 202);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(accepted.length + refused.length, JSON.stringify(answers.slice(0, 3))).toBe(ATTEMPTS);
    // A token bucket allows 10 + 5 × 10 = 60 over 10 s (a little more only if the answers took
    // longer than the sending); two windows per replica allowed 100 per replica.
    expect(accepted.length).toBeLessThanOrEqual(10 + Math.floor(5 * Math.max(10, tookS)));
    expect(accepted.length).toBeGreaterThanOrEqual(50);
    for (const answer of refused) {
      expect(answer.body.error).toMatchObject({
        code: 'rate_limited',
        details: { limit: 'creates_per_second', usage: 10, limit_value: 5, burst: 10 },
      });
      expect(answer.retryAfter).toBe('1');
    }
    // The store holds exactly the accepted creates.
    expect((await api.stack.store.getTenantUsage(tenant.id)).sandboxes).toBe(accepted.length);
    const client = api.stack.temporal.client;
    await Promise.all(
      accepted.map((answer) =>
        client.workflow
          .getHandle(answer.body.id!)
          .terminate('test done')
          .catch(() => undefined),
      ),
    );
  });
});

const databaseUrl = process.env.TEST_DATABASE_URL;

describe.skipIf(!databaseUrl)('two API replicas on one PostgreSQL', () => {
  let api: ApiStack | undefined;
  let second: Store | undefined;
  afterAll(async () => {
    await second?.close();
    await api?.stop();
  });

  it(`start exactly ${LIMIT} of ${RACERS} racing creates of one tenant against a limit of ${LIMIT}`, async () => {
    // No worker: the started workflows wait on the task queue; they are terminated below.
    api = await startApiStack({ stack: { databaseUrl, worker: false } });
    const tenant = api.tenantA;
    const env = {
      // Roomy but for the sandboxes: the built-in rate (5 a second) would refuse most at once.
      TENANT_LIMITS: JSON.stringify({
        default: ROOMY_TENANT_LIMITS,
        tenants: { [tenant.id]: { sandboxes: LIMIT } },
      }),
    };
    second = await openStore(api.stack.storeOptions);
    // Two replicas: each its own app, its own store (its own connection pool), its own port.
    const replicas = [
      await api.listen(api.appWith(env)),
      await api.listen(api.appWith(env, { store: second })),
    ];
    const answers = await Promise.all(
      Array.from({ length: RACERS }, async (_, i) => {
        const response = await fetch(`${replicas[i % 2]!.url}/v1/sandboxes`, {
          method: 'POST',
          headers: { ...bearer(tenant), 'Content-Type': 'application/json' },
          body: JSON.stringify(createBody(2048)),
        });
        return {
          status: response.status,
          body: (await response.json()) as { id?: string; error?: unknown },
        };
      }),
    );
    const accepted = answers.filter((answer) => answer.status === 202);
    const refused = answers.filter((answer) => answer.status === 429);
    expect(accepted).toHaveLength(LIMIT);
    expect(refused).toHaveLength(RACERS - LIMIT);
    for (const answer of refused) {
      expect(answer.body.error).toMatchObject({
        code: 'quota_exceeded',
        details: { limit: 'sandboxes', usage: LIMIT, limit_value: LIMIT },
      });
    }
    expect((await api.stack.store.getTenantUsage(tenant.id)).sandboxes).toBe(LIMIT);
    // Exactly the accepted creates' workflows were started.
    const client = api.stack.temporal.client;
    const started = await waitUntil(
      async () => {
        const ids: string[] = [];
        for await (const execution of client.workflow.list({
          query: `TenantId = '${tenant.id}' AND WorkflowType = 'createSandbox'`,
        })) {
          ids.push(execution.workflowId);
        }
        return ids.length >= LIMIT ? ids : undefined;
      },
      { what: `${LIMIT} workflows in visibility` },
    );
    expect(started.sort()).toEqual(accepted.map((answer) => answer.body.id).sort());
    await Promise.all(started.map((id) => client.workflow.getHandle(id).terminate('test done')));
  });
});
