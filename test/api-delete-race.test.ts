/**
 * A delete that lands while the create is marking its sandbox running (the pod already has its
 * IP): the create must end cancelled, not fail as internal, and the sandbox must end deleted
 * with no pod left.
 */
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Store } from '../store/index.js';
import {
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { until } from './support/until.js';

let api: ApiStack;
let markCalls = 0;

/**
 * The activities' store, with `markSandboxRunning` held until something else changes the
 * sandbox (at most 10 s): the window in which a delete lands.
 */
function slowMarkRunning(store: Store): Store {
  return {
    ...store,
    async markSandboxRunning(input) {
      markCalls += 1;
      const deadline = Date.now() + 10_000;
      while (Date.now() < deadline) {
        if ((await store.getSandboxById(input.sandboxId))?.state !== 'creating') break;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return store.markSandboxRunning(input);
    },
  };
}

beforeAll(async () => {
  api = await startApiStack({
    stack: { cluster: { startupDelayMs: 100 }, activityStore: slowMarkRunning },
  });
});
afterAll(async () => {
  await api?.stop();
});

it('ends the create cancelled and the sandbox deleted when a delete lands while it is marked running', async () => {
  const created = await request(api.app)
    .post('/v1/sandboxes')
    .set(bearer(api.tenantA))
    .send(createBody(2048));
  expect(created.status, created.text).toBe(202);
  const op = created.body as OperationBody;
  await until(() => markCalls === 1);

  const accepted = await request(api.app)
    .delete(`/v1/sandboxes/${op.sandbox_id}`)
    .set(bearer(api.tenantA));
  expect(accepted.status, accepted.text).toBe(202);
  expect((await awaitOperation(api.app, api.tenantA, accepted.body.id)).status).toBe('succeeded');

  const create = await awaitOperation(api.app, api.tenantA, op.id);
  expect(create.status, JSON.stringify(create.error)).toBe('cancelled');
  const sandbox = (await api.stack.store.getSandbox(api.tenantA.id, op.sandbox_id))!;
  expect(sandbox.state).toBe('deleted');
  const pods = await api.stack.kubernetes.core.listNamespacedPod({
    namespace: api.stack.namespace,
  });
  expect(pods.items).toHaveLength(0);
});
