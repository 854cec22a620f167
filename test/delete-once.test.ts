/**
 * One delete at a time (issue 48): DELETEs of one sandbox sent at once, on two API replicas over
 * one store, answer one operation and start one delete workflow; once it is done, a DELETE
 * answers 409 already_done. On SQLite, and on PostgreSQL when TEST_DATABASE_URL is set.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/store/index.js';
import {
  awaitOperation,
  bearer,
  createBody,
  finishedCreate,
  startApiStack,
  type ApiStack,
} from './support/api.js';

const backends = [
  { name: 'SQLite', databaseUrl: undefined },
  ...(process.env.TEST_DATABASE_URL
    ? [{ name: 'PostgreSQL', databaseUrl: process.env.TEST_DATABASE_URL }]
    : []),
];

describe.each(backends)('one delete at a time on $name', ({ databaseUrl }) => {
  let api: ApiStack;
  let secondStore: Store;
  beforeAll(async () => {
    api = await startApiStack({ stack: { cluster: { startupDelayMs: 50 }, databaseUrl } });
    secondStore = await openStore(api.stack.storeOptions);
  });
  afterAll(async () => {
    await secondStore?.close();
    await api?.stop();
  });

  it('DELETEs sent at once on two replicas answer one operation, and one delete workflow runs', async () => {
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    expect(created.status).toBe('succeeded');
    const sandboxId = created.sandbox_id as string;
    const second = api.appWith({}, { store: secondStore });
    const answers = await Promise.all(
      [api.app, second, api.app, second].map((app) =>
        request(app).delete(`/v1/sandboxes/${sandboxId}`).set(bearer(api.tenantA)),
      ),
    );
    for (const answer of answers) expect(answer.status, answer.text).toBe(202);
    const ids = new Set(answers.map((answer) => answer.body.id as string));
    expect(ids.size, JSON.stringify([...ids])).toBe(1);
    const [operationId] = [...ids] as [string];
    const done = await awaitOperation(api.app, api.tenantA, operationId);
    expect(done).toMatchObject({ type: 'sandbox.delete', status: 'succeeded' });
    // The store holds one delete, and Temporal ran one delete workflow for the sandbox.
    const page = await request(api.app).get('/v1/operations?limit=200').set(bearer(api.tenantA));
    const deletes = (page.body.operations as Array<{ type: string; sandbox_id: string }>).filter(
      (op) => op.type === 'sandbox.delete' && op.sandbox_id === sandboxId,
    );
    expect(deletes).toHaveLength(1);
    const workflows: string[] = [];
    for await (const execution of api.stack.temporal.client.workflow.list({
      query: `WorkflowType = 'deleteSandbox' AND WorkflowId = '${operationId}'`,
    })) {
      workflows.push(execution.workflowId);
    }
    expect(workflows.length).toBeLessThanOrEqual(1);
    const again = await request(api.app)
      .delete(`/v1/sandboxes/${sandboxId}`)
      .set(bearer(api.tenantA));
    expect(again.status, again.text).toBe(409);
    expect(again.body.error.code).toBe('already_done');
  });

  it('the store begins one delete per sandbox until it finishes, then a new one', async () => {
    const created = await finishedCreate(api.app, api.tenantB, createBody(2048));
    const input = (id: string) => ({
      id,
      tenant: api.tenantB.id,
      sandboxId: created.sandbox_id as string,
      cause: 'requested' as const,
    });
    const begun = await Promise.all([
      api.stack.store.beginDelete(input('op_first')),
      secondStore.beginDelete(input('op_second')),
    ]);
    expect(begun.filter((b) => b.inserted)).toHaveLength(1);
    expect(new Set(begun.map((b) => b.operationId)).size).toBe(1);
    const running = begun[0]!.operationId;
    await api.stack.store.advanceOperation(running, { phase: 'finished', status: 'succeeded' });
    const next = await secondStore.beginDelete(input('op_third'));
    expect(next).toEqual({ operationId: 'op_third', inserted: true });
  });
});
