/**
 * One truth for a create's outcome (docs/architecture.md, "The outcome at the decision"): the
 * operation and its sandbox change together, in one store transaction, so a reader who reads the
 * operation and then the sandbox never finds the operation `failed` while the sandbox still says
 * `creating`, nor `succeeded` while the sandbox is not `running`. Read through the API (GET the
 * operation, then GET the sandbox) and through the store (the same two reads), over and over,
 * during a refused create and a successful one, on every store backend (SQLite; PostgreSQL when
 * TEST_DATABASE_URL is set). Real dev server, the real worker and API, the simulated cluster
 * over HTTP.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acceptedCreate,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { storeBackends } from './support/store.js';

/** One read of both: the operation as read first, then the sandbox. */
interface Reading {
  by: 'api' | 'store';
  status: string;
  phase: string;
  done: boolean;
  state: string | undefined;
}

/** Resolves after `ms` milliseconds. */
function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Readings whose operation and sandbox disagree about the create's outcome. */
function disagreements(readings: Reading[]): Reading[] {
  return readings.filter(
    ({ status, state }) =>
      ((status === 'failed' || status === 'cancelled') && state === 'creating') ||
      (status === 'succeeded' && state !== 'running'),
  );
}

describe.each(storeBackends())('a create outcome on $name', (backend) => {
  const databaseUrl = backend.name === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;
  let api: ApiStack;
  beforeAll(async () => {
    api = await startApiStack({
      // The node refuses disk 300: no floor may refuse it before the 202.
      stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false, databaseUrl },
    });
  });
  afterAll(async () => {
    await api?.stop();
  });

  /** Reads the operation, then its sandbox, through the API, until the operation is done. */
  async function readApi(operation: OperationBody, readings: Reading[]): Promise<void> {
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const op = await request(api.app)
        .get(`/v1/operations/${operation.id}`)
        .set(bearer(api.tenantA));
      const sandbox = await request(api.app)
        .get(`/v1/sandboxes/${operation.sandbox_id}`)
        .set(bearer(api.tenantA));
      const body = op.body as OperationBody;
      readings.push({
        by: 'api',
        status: body.status,
        phase: body.phase,
        done: body.done,
        state: (sandbox.body as { state?: string }).state,
      });
      if (body.done) return;
    }
    throw new Error(`operation ${operation.id} not done within 60 s`);
  }

  /** The same two reads straight from the store, every 2 ms. */
  async function readStore(operation: OperationBody, readings: Reading[]): Promise<void> {
    const { store } = api.stack;
    const deadline = Date.now() + 60_000;
    while (Date.now() < deadline) {
      const op = await store.getOperation(api.tenantA.id, operation.id);
      const sandbox = await store.getSandboxById(operation.sandbox_id);
      if (!op) throw new Error(`operation ${operation.id} not in the store`);
      readings.push({
        by: 'store',
        status: op.status,
        phase: op.phase,
        done: op.done,
        state: sandbox?.state,
      });
      if (op.done) return;
      // SQLite answers synchronously: leave the worker, in this process, its turn.
      await pause(2);
    }
    throw new Error(`operation ${operation.id} not done within 60 s`);
  }

  /** Creates with `diskMib` and reads both ways at once until done; returns every reading. */
  async function readWhileCreating(diskMib: number): Promise<Reading[]> {
    const operation = await acceptedCreate(api.app, api.tenantA, createBody(diskMib));
    const readings: Reading[] = [];
    await Promise.all([readApi(operation, readings), readStore(operation, readings)]);
    return readings;
  }

  it('a refused create: the sandbox reads failed whenever the operation does, from the first read that says so', async () => {
    const readings = await readWhileCreating(300);

    // The reads saw the outcome before compensation ended, and the create end failed.
    expect(
      readings.some(({ status, done }) => status === 'failed' && !done),
      'a read found the operation failed while compensating',
    ).toBe(true);
    expect(readings.at(-1)).toMatchObject({ status: 'failed', done: true, state: 'failed' });
    expect(disagreements(readings)).toEqual([]);
  });

  it('a successful create: the sandbox reads running whenever the operation says succeeded', async () => {
    const readings = await readWhileCreating(2048);

    expect(readings.some(({ status }) => status === 'running')).toBe(true);
    expect(readings.filter(({ status }) => status === 'succeeded').length).toBeGreaterThan(0);
    expect(disagreements(readings)).toEqual([]);
  });
});
