/**
 * Tenant limits are exact across replicas (docs/api.md, "Tenant limits"): the check and the
 * insert share one transaction under the tenant's admission lock (store/tenant-usage.ts), so
 * creates racing through two stores on one database, or two API replicas on one PostgreSQL,
 * never take a tenant past its limit.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { openStore, type NewSandboxOutcome, type Store } from '../store/index.js';
import { bearer, createBody, startApiStack, type ApiStack } from './support/api.js';
import { storeBackends, type StoreTarget } from './support/store.js';
import { waitUntil } from '../scripts/wait-until.js';

const RACERS = 200;
const LIMIT = 50;

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
      TENANT_LIMITS: JSON.stringify({ tenants: { [tenant.id]: { sandboxes: LIMIT } } }),
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
