/**
 * Fairness between tenants (docs/architecture.md, "Fairness between tenants"): every workflow the
 * service starts for a tenant carries its fairness key (the tenant id) and weight
 * (TENANT_LIMITS' `fairness_weight`), as the Temporal server reports it back when the workflow
 * is described: the create, a caller's delete, the sandbox's lifetime (started by a step of the
 * create) and the expiry's delete (started by a step of the lifetime), the last two through the
 * priority the starting activity inherited from its workflow.
 */
import { randomUUID } from 'node:crypto';
import type { Priority } from '@temporalio/common';
import type { Express } from 'express';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { lifetimeWorkflowId } from '../contract/index.js';
import { ROOMY_TENANT_LIMITS } from '../tools/roomy-tenant-limits.js';
import { waitUntil } from '../tools/wait-until.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
} from './support/api.js';

const TEMPLATES = {
  base: { image: 'ghcr.io/durable-sandbox/base:1' },
  leased: { image: 'ghcr.io/durable-sandbox/base:1', default_ttl: '2s', max_ttl: '600s' },
};

/** A tenant of a weight of its own, known before the stack starts: its workers read it too. */
const WEIGHTED = { id: `fair-${randomUUID().slice(0, 8)}`, token: `token-fair-${randomUUID()}` };
const LIMITS = JSON.stringify({
  default: ROOMY_TENANT_LIMITS,
  tenants: { [WEIGHTED.id]: { fairness_weight: 2.5 } },
});

let api: ApiStack;
let app: Express;
beforeAll(async () => {
  api = await startApiStack({
    env: { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) },
    stack: {
      cluster: { startupDelayMs: 50, rootfsMib: { base: 451, leased: 451 } },
      learnRootfsFloors: false,
      // The API and the workers read the same TENANT_LIMITS, as deploy/ gives both.
      tenantLimits: loadConfig({ TENANT_LIMITS: LIMITS }).tenantLimits,
    },
  });
  app = api.appWith({
    API_TOKENS: `${WEIGHTED.id}:${WEIGHTED.token},${api.tenantB.id}:${api.tenantB.token}`,
    TENANT_LIMITS: LIMITS,
  });
});
afterAll(async () => {
  await api?.stop();
});

/** The fairness key and weight of a workflow's priority, as the Temporal server reports them. */
async function priorityOf(workflowId: string): Promise<Priority> {
  const description = await api.stack.temporal.client.workflow.getHandle(workflowId).describe();
  const { fairnessKey, fairnessWeight } = description.priority ?? {};
  return { fairnessKey, fairnessWeight };
}

describe('fairness keys', () => {
  it("a tenant's create, lifetime and expiry's delete carry its key and weight, as the server reports", async () => {
    const weighted = { fairnessKey: WEIGHTED.id, fairnessWeight: 2.5 };
    const created = await acceptedCreate(app, WEIGHTED, createBody(2048, { template: 'leased' }));
    expect(await priorityOf(created.id)).toEqual(weighted);
    const done = await awaitOperation(app, WEIGHTED, created.id);
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    // Started by the create's markSandboxRunning step, once it marked the sandbox running.
    const lifetime = await waitUntil(
      () => priorityOf(lifetimeWorkflowId(created.sandbox_id)).catch(() => undefined),
      { what: `the lifetime of ${created.sandbox_id}` },
    );
    expect(lifetime).toEqual(weighted);
    // Started by the lifetime's expiry step, with the priority it inherited.
    const expiry = await waitUntil(
      async () => {
        const response = await request(app).get('/v1/operations').set(bearer(WEIGHTED));
        return (response.body.operations as Array<{ id: string; type: string; sandbox_id: string }>)
          .filter((op) => op.sandbox_id === created.sandbox_id && op.type === 'sandbox.delete')
          .at(0);
      },
      { timeoutMs: 30_000, what: `the expiry's delete of ${created.sandbox_id}` },
    );
    expect(await priorityOf(expiry.id)).toEqual(weighted);
    await awaitOperation(app, WEIGHTED, expiry.id);
  });

  it("a caller's delete carries the tenant's key at the default weight of 1", async () => {
    const created = await acceptedCreate(app, api.tenantB, createBody(2048));
    expect(await priorityOf(created.id)).toEqual({
      fairnessKey: api.tenantB.id,
      fairnessWeight: 1,
    });
    await awaitOperation(app, api.tenantB, created.id);
    const deleted = await request(app)
      .delete(`/v1/sandboxes/${created.sandbox_id}`)
      .set(bearer(api.tenantB));
    expect(deleted.status, deleted.text).toBe(202);
    expect(await priorityOf(deleted.body.id)).toEqual({
      fairnessKey: api.tenantB.id,
      fairnessWeight: 1,
    });
    await awaitOperation(app, api.tenantB, deleted.body.id);
  });
});
