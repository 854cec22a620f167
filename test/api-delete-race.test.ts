/**
 * A delete that lands while the create is marking its sandbox running (the pod already has its
 * IP): the create finishes that step (too late to cancel) and succeeds, never fails as
 * internal; then the delete removes the pod and the sandbox ends deleted.
 */
import { workerRegistry } from '../src/activities/metrics.js';
import request from 'supertest';
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { Store } from '../src/store/index.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
} from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';

let api: ApiStack;
let markCalls = 0;

/** The activities' store, with `markSandboxRunning` held 1.5 s: the window a delete lands in. */
function slowMarkRunning(store: Store): Store {
  return {
    ...store,
    async markSandboxRunning(input) {
      markCalls += 1;
      await new Promise((resolve) => setTimeout(resolve, 1_500));
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

it('lets the create succeed and then deletes the sandbox when a delete lands while it is marked running', async () => {
  const op = await acceptedCreate(api.app, api.tenantA, createBody(2048));
  const finishedBefore = await finishedCreates();
  await waitUntil(() => markCalls === 1);

  const accepted = await request(api.app)
    .delete(`/v1/sandboxes/${op.sandbox_id}`)
    .set(bearer(api.tenantA));
  expect(accepted.status, accepted.text).toBe(202);
  expect((await awaitOperation(api.app, api.tenantA, accepted.body.id)).status).toBe('succeeded');

  const create = await awaitOperation(api.app, api.tenantA, op.id);
  expect(create.status, JSON.stringify(create.error)).toBe('succeeded');
  const sandbox = (await api.stack.store.getSandbox(api.tenantA.id, op.sandbox_id))!;
  expect(sandbox.state).toBe('deleted');
  const pods = await api.stack.kubernetes.core.listNamespacedPod({
    namespace: api.stack.namespace,
  });
  expect(pods.items).toHaveLength(0);
  // The create finished once: counted once, as succeeded.
  expect((await finishedCreates()) - finishedBefore).toBe(1);
});

/** Sum of durable_sandbox_creates_finished_total over all its series, from this process. */
async function finishedCreates(): Promise<number> {
  const metric = await workerRegistry
    .getSingleMetric('durable_sandbox_creates_finished_total')
    ?.get();
  return (metric?.values ?? []).reduce((sum, sample) => sum + sample.value, 0);
}
