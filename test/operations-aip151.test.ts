/**
 * Operations as AIP-151 describes them (docs/api.md, "Operations"), against the dev server, the
 * simulated cluster and the store on SQLite and (with TEST_DATABASE_URL) PostgreSQL:
 * `create_time`, `end_time` (null while running), `requested_cancellation` (a cancel, or a DELETE
 * of a creating sandbox), and `details.path` (`warm` or `cold`), on a new app over the same store
 * too (read from the store, migration 0022).
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { waitUntil } from '../tools/wait-until.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { storeBackends } from './support/store.js';

const POOL_RESOURCES = { cpu: 1, memory_mib: 256, disk_mib: 2048 };
const TEMPLATES = {
  base: { image: 'ghcr.io/durable-sandbox/base:1' },
  pooled: {
    image: 'ghcr.io/durable-sandbox/base:1',
    warm_pool: { size: 2, resources: POOL_RESOURCES },
  },
};

type Aip151Operation = OperationBody & {
  create_time: string;
  end_time: string | null;
  requested_cancellation: boolean;
  details: { placements: unknown[]; path: 'warm' | 'cold' | null; attempts: number | null };
};

describe.each(storeBackends())('operations as AIP-151 describes them on $name', (backend) => {
  const databaseUrl = backend.name === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;
  let api: ApiStack;
  beforeAll(async () => {
    api = await startApiStack({
      env: { SANDBOX_TEMPLATES: JSON.stringify(TEMPLATES) },
      stack: {
        cluster: { startupDelayMs: 50, rootfsMib: { base: 451, pooled: 451 } },
        learnRootfsFloors: false,
        databaseUrl,
      },
    });
  }, 120_000);
  afterAll(async () => {
    api.stack.cluster.faults.neverReady(false);
    await api?.stop();
  });

  async function read(id: string): Promise<Aip151Operation> {
    const response = await request(api.appWith({}))
      .get(`/v1/operations/${id}`)
      .set(bearer(api.tenantA));
    expect(response.status, response.text).toBe(200);
    return response.body as Aip151Operation;
  }

  it('a cold create: create_time, end_time once done, no cancellation asked, path cold', async () => {
    const created = (await acceptedCreate(
      api.app,
      api.tenantA,
      createBody(2048),
    )) as Aip151Operation;
    expect(created.end_time).toBeNull();
    expect(created.requested_cancellation).toBe(false);
    expect(created.create_time).toBe(created.created_at);
    await awaitOperation(api.app, api.tenantA, created.id);
    const done = await read(created.id);
    expect(done).toMatchObject({ status: 'succeeded', done: true, requested_cancellation: false });
    expect(done.create_time).toBe(done.created_at);
    expect(done.end_time).not.toBeNull();
    expect(Date.parse(done.end_time!)).toBeGreaterThanOrEqual(Date.parse(done.create_time));
    expect(done.details.path).toBe('cold');
    // Its one pod, made for it.
    expect(done.details.attempts).toBe(1);
  });

  it('a cancel sets requested_cancellation; end_time is null while it runs and set once done', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const created = await acceptedCreate(api.app, api.tenantA, createBody(2048));
      const waiting = await awaitOperation(api.app, api.tenantA, created.id, {
        until: (op) => op.phase === 'waiting_for_ip',
      });
      const running = await read(waiting.id);
      expect(running).toMatchObject({ done: false, end_time: null, requested_cancellation: false });
      expect(running.details.path).toBe('cold');
      expect(running.details.attempts).toBe(1);
      const cancel = await request(api.app)
        .post(`/v1/operations/${created.id}/cancel`)
        .set(bearer(api.tenantA));
      expect(cancel.status, cancel.text).toBe(202);
      expect((cancel.body as Aip151Operation).requested_cancellation).toBe(true);
      await awaitOperation(api.app, api.tenantA, created.id);
      const done = await read(created.id);
      expect(done).toMatchObject({ status: 'cancelled', done: true, requested_cancellation: true });
      expect(done.end_time).not.toBeNull();
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('a DELETE of a sandbox still creating sets requested_cancellation on its create', async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const created = await acceptedCreate(api.app, api.tenantA, createBody(2048));
      await awaitOperation(api.app, api.tenantA, created.id, {
        until: (op) => op.phase === 'waiting_for_ip',
      });
      const deleted = await request(api.app)
        .delete(`/v1/sandboxes/${created.sandbox_id}`)
        .set(bearer(api.tenantA));
      expect(deleted.status, deleted.text).toBe(202);
      const deleteOperation = deleted.body as Aip151Operation;
      expect(deleteOperation.requested_cancellation).toBe(false);
      expect(deleteOperation.details.path).toBeNull();
      expect(deleteOperation.details.attempts).toBeNull();
      expect((await read(created.id)).requested_cancellation).toBe(true);
      await awaitOperation(api.app, api.tenantA, deleteOperation.id);
      expect((await read(deleteOperation.id)).end_time).not.toBeNull();
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });

  it('a create that claims a warm pod says path warm', async () => {
    const warm = await waitUntil(
      async () => {
        const created = await acceptedCreate(api.app, api.tenantA, {
          template: 'pooled',
          resources: POOL_RESOURCES,
        });
        await awaitOperation(api.app, api.tenantA, created.id);
        const done = await read(created.id);
        expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
        expect(['warm', 'cold']).toContain(done.details.path);
        return done.details.path === 'warm' ? done : undefined;
      },
      { timeoutMs: 60_000, intervalMs: 500, what: 'a create claiming a warm pod' },
    );
    expect(warm.details.path).toBe('warm');
    // The warm pod it claimed is its one attempt.
    expect(warm.details.attempts).toBe(1);
  });
});
