import { sql } from 'kysely';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/database.js';
import { LEGACY_OPERATION_CHANNEL, OPERATION_CHANNEL } from '../src/store/operation-notifier.js';
import { MIGRATIONS } from '../src/store/migrations/index.js';
import {
  InvalidPageTokenError,
  openStore,
  type MarkSandboxRunningInput,
  type NewSandboxInput,
  type Store,
  type StoreOptions,
} from '../src/store/index.js';
import { readsSandboxes, statementsDuring } from './support/statement-count.js';
import { storeBackends, type StoreTarget } from './support/store.js';

const RESOURCES = { cpu: 1, memoryMib: 1024, diskMib: 2048 };

/** A clock that moves one second per reading, so every row has its own created_at. */
function steppingClock(): () => Date {
  let ms = Date.parse('2025-01-01T00:00:00.000Z');
  return () => new Date((ms += 1000));
}

function sandboxInput(n: number, overrides: Partial<NewSandboxInput> = {}): NewSandboxInput {
  return {
    id: `sbx_${String(n).padStart(4, '0')}`,
    tenant: 'acme',
    template: 'base',
    resources: RESOURCES,
    operationId: `op_${String(n).padStart(4, '0')}`,
    ...overrides,
  };
}

/** First execution of a fresh sandbox, as createSandbox stores it. */
function firstExecution(sandboxId: string) {
  return { sandboxId, generation: 1, attempt: 1 };
}

describe.each(storeBackends())('store on $name', (backend) => {
  let target: StoreTarget;
  let options: StoreOptions;
  let store: Store;

  beforeEach(async () => {
    target = await backend.freshTarget();
    options = { ...target.options, clock: steppingClock() };
    store = await openStore(options);
  });
  afterEach(async () => {
    await store?.close();
    await target?.dispose();
  });

  /** Store.markSandboxRunning's outcome alone. */
  async function markResult(input: MarkSandboxRunningInput) {
    return (await store.markSandboxRunning(input)).result;
  }

  /** Creates a sandbox and fails the test unless it was created. */
  async function created(input: NewSandboxInput) {
    const result = await store.createSandbox(input);
    if (result.kind !== 'created') throw new Error(`expected created, got ${result.kind}`);
    return result.sandbox;
  }

  /** Adds an active execution behind the store's back (no Store method activates one yet). */
  async function insertActiveExecution(sandboxId: string, generation: number, attempt: number) {
    const { db } = openDatabase(target.options);
    try {
      await db
        .insertInto('executions')
        .values({
          sandbox_id: sandboxId,
          generation,
          activation_attempt: attempt,
          state: 'active',
          retired_reason: null,
          retired_at: null,
          created_at: new Date().toISOString(),
        })
        .execute();
    } finally {
      await db.destroy();
    }
  }

  /** kysely's record of the applied migrations, read straight from the database. */
  async function appliedMigrations() {
    const { db } = openDatabase(target.options);
    try {
      const { rows } = await sql<{
        name: string;
        timestamp: string;
      }>`select name, timestamp from kysely_migration order by name`.execute(db);
      return rows;
    } finally {
      await db.destroy();
    }
  }

  describe('migrations', () => {
    it('the first open applies every migration and a second open applies none', async () => {
      const first = await appliedMigrations();
      expect(first.map((row) => row.name)).toEqual(Object.keys(MIGRATIONS).sort());
      await store.close();

      store = await openStore(options);
      expect(await appliedMigrations()).toEqual(first);
    });
    it('opening the same database a second time migrates nothing and keeps the data', async () => {
      await created(sandboxInput(1));
      await store.close();

      store = await openStore(options);
      expect((await store.getSandboxById('sbx_0001'))?.operationId).toBe('op_0001');
    });
    it('two stores opening an empty database at once both migrate it and share it', async () => {
      const fresh = await backend.freshTarget();
      try {
        const [first, second] = await Promise.all([
          openStore(fresh.options),
          openStore(fresh.options),
        ]);
        try {
          await first.createSandbox(sandboxInput(1));
          expect((await second.getSandboxById('sbx_0001'))?.state).toBe('creating');
        } finally {
          await first.close();
          await second.close();
        }
      } finally {
        await fresh.dispose();
      }
    });
  });

  describe('createSandbox and getSandbox', () => {
    it('stores a creating sandbox at generation 1 and reads it back for its tenant', async () => {
      const sandbox = await created(sandboxInput(1));

      expect(sandbox).toMatchObject({
        id: 'sbx_0001',
        tenant: 'acme',
        template: 'base',
        resources: RESOURCES,
        state: 'creating',
        generation: 1,
        operationId: 'op_0001',
        pod: { name: null, uid: null, ip: null },
        failure: null,
      });
      expect(sandbox.createdAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(await store.getSandbox('acme', 'sbx_0001')).toEqual(sandbox);
      expect(await store.getSandboxById('sbx_0001')).toEqual(sandbox);
    });

    it("answers undefined for another tenant's sandbox and for an unknown id", async () => {
      await created(sandboxInput(1));

      expect(await store.getSandbox('globex', 'sbx_0001')).toBeUndefined();
      expect(await store.getSandbox('acme', 'sbx_9999')).toBeUndefined();
      expect(await store.getSandboxById('sbx_9999')).toBeUndefined();
    });
  });

  describe('idempotency keys', () => {
    const key = { key: 'key-1', requestHash: 'hash-a' };

    it('replays the first create for the same key and request hash, storing nothing new', async () => {
      await created(sandboxInput(1, { idempotency: key }));

      const again = await store.createSandbox(sandboxInput(2, { idempotency: key }));

      expect(again).toEqual({ kind: 'replay', operationId: 'op_0001', sandboxId: 'sbx_0001' });
      expect(await store.getSandboxById('sbx_0002')).toBeUndefined();
    });

    it('answers conflict for the same key with a different request hash', async () => {
      await created(sandboxInput(1, { idempotency: key }));

      const other = await store.createSandbox(
        sandboxInput(2, { idempotency: { key: 'key-1', requestHash: 'hash-b' } }),
      );

      expect(other).toEqual({ kind: 'conflict', operationId: 'op_0001' });
      expect(await store.getSandboxById('sbx_0002')).toBeUndefined();
    });

    it('does not share keys between tenants', async () => {
      await created(sandboxInput(1, { idempotency: key }));

      const result = await store.createSandbox(
        sandboxInput(2, { tenant: 'globex', idempotency: key }),
      );

      expect(result.kind).toBe('created');
    });

    it('creates exactly once when five creates with one key race', async () => {
      const results = await Promise.all(
        [1, 2, 3, 4, 5].map((n) => store.createSandbox(sandboxInput(n, { idempotency: key }))),
      );

      const kinds = results.map((result) => result.kind).sort();
      expect(kinds).toEqual(['created', 'replay', 'replay', 'replay', 'replay']);
      const winner = results.find((result) => result.kind === 'created');
      for (const result of results) {
        if (result.kind === 'replay' && winner?.kind === 'created') {
          expect(result.sandboxId).toBe(winner.sandbox.id);
        }
      }
    });
  });

  describe('listSandboxes', () => {
    async function seed(): Promise<void> {
      for (let n = 1; n <= 5; n += 1) await created(sandboxInput(n));
      await created(sandboxInput(6, { tenant: 'globex' }));
      await store.markSandboxFailed({ sandboxId: 'sbx_0002', code: 'internal', message: 'x' });
      await store.markSandboxFailed({ sandboxId: 'sbx_0004', code: 'internal', message: 'x' });
    }

    it("lists only the tenant's sandboxes, newest first", async () => {
      await seed();

      const page = await store.listSandboxes('acme', { limit: 50 });

      expect(page.sandboxes.map((s) => s.id)).toEqual([
        'sbx_0005',
        'sbx_0004',
        'sbx_0003',
        'sbx_0002',
        'sbx_0001',
      ]);
      expect(page.nextPageToken).toBeUndefined();
    });

    it('pages with the token until the last page, which has no token', async () => {
      await seed();

      const first = await store.listSandboxes('acme', { limit: 2 });
      const second = await store.listSandboxes('acme', {
        limit: 2,
        pageToken: first.nextPageToken,
      });
      const third = await store.listSandboxes('acme', {
        limit: 2,
        pageToken: second.nextPageToken,
      });

      expect(first.sandboxes.map((s) => s.id)).toEqual(['sbx_0005', 'sbx_0004']);
      expect(second.sandboxes.map((s) => s.id)).toEqual(['sbx_0003', 'sbx_0002']);
      expect(third.sandboxes.map((s) => s.id)).toEqual(['sbx_0001']);
      expect(third.nextPageToken).toBeUndefined();
    });

    it('filters by state, across pages', async () => {
      await seed();

      const first = await store.listSandboxes('acme', { state: 'failed', limit: 1 });
      const second = await store.listSandboxes('acme', {
        state: 'failed',
        limit: 1,
        pageToken: first.nextPageToken,
      });

      expect(first.sandboxes.map((s) => s.id)).toEqual(['sbx_0004']);
      expect(second.sandboxes.map((s) => s.id)).toEqual(['sbx_0002']);
      expect(second.nextPageToken).toBeUndefined();
    });

    it('rejects a page token it did not issue and a limit outside 1..200', async () => {
      await expect(
        store.listSandboxes('acme', { limit: 10, pageToken: 'not-a-token' }),
      ).rejects.toBeInstanceOf(InvalidPageTokenError);
      await expect(store.listSandboxes('acme', { limit: 0 })).rejects.toBeInstanceOf(RangeError);
      await expect(store.listSandboxes('acme', { limit: 201 })).rejects.toBeInstanceOf(RangeError);
    });
  });

  describe('recordPod and markSandboxRunning (fenced)', () => {
    it('records the pod only for the current generation and attempt', async () => {
      await created(sandboxInput(1));
      const pod = { podName: 'sbx-0001-g1', podUid: 'uid-1' };

      expect(await store.recordPod({ ...firstExecution('sbx_0001'), generation: 2, ...pod })).toBe(
        false,
      );
      expect(await store.recordPod({ ...firstExecution('sbx_0001'), attempt: 2, ...pod })).toBe(
        false,
      );
      expect((await store.getSandboxById('sbx_0001'))?.pod.uid).toBeNull();

      expect(await store.recordPod({ ...firstExecution('sbx_0001'), ...pod })).toBe(true);
      expect((await store.getSandboxById('sbx_0001'))?.pod).toEqual({
        name: 'sbx-0001-g1',
        uid: 'uid-1',
        ip: null,
      });
    });

    it('marks the sandbox running only for the current execution and only once', async () => {
      await created(sandboxInput(1));
      const ip = { podIp: '10.0.0.7' };

      expect(await markResult({ ...firstExecution('sbx_0001'), generation: 2, ...ip })).toBe(
        'fenced',
      );
      expect(await markResult({ ...firstExecution('sbx_0001'), attempt: 2, ...ip })).toBe('fenced');
      expect((await store.getSandboxById('sbx_0001'))?.state).toBe('creating');

      expect(await markResult({ ...firstExecution('sbx_0001'), ...ip })).toBe('marked');
      const sandbox = await store.getSandboxById('sbx_0001');
      expect(sandbox?.state).toBe('running');
      expect(sandbox?.pod.ip).toBe('10.0.0.7');
      // A retry whose first attempt committed finds the same outcome, not a fence.
      expect(await markResult({ ...firstExecution('sbx_0001'), ...ip })).toBe('already_running');
      expect(await markResult({ ...firstExecution('sbx_0001'), podIp: '10.0.0.8' })).toBe('fenced');
    });

    it('marks running on one read of the sandbox row and answers the row as it left it', async () => {
      const sandbox = await created(sandboxInput(1, { ttlMs: 60_000 }));
      const ref = { ...firstExecution(sandbox.id), operationId: sandbox.operationId };
      await store.recordPod({ ...ref, podName: 'sbx-0001-g1', podUid: 'uid-1' });

      const first = await statementsDuring(() =>
        store.markSandboxRunning({ ...ref, podIp: '10.0.0.7' }),
      );
      const stored = await store.getSandboxById(sandbox.id);
      expect(stored).toMatchObject({ state: 'running', pod: { ip: '10.0.0.7' } });
      expect(stored?.expireTime).not.toBeNull();
      expect(first.result).toEqual({ result: 'marked', sandbox: stored });
      expect(first.statements.filter(readsSandboxes), first.statements.join('\n')).toHaveLength(1);
      // The create's result is that same row.
      const operation = await store.getOperation('acme', sandbox.operationId);
      expect(operation?.result?.sandbox).toEqual(stored);

      // A retry whose first attempt committed answers the same sandbox.
      const again = await store.markSandboxRunning({ ...ref, podIp: '10.0.0.7' });
      expect(again).toEqual({ result: 'already_running', sandbox: stored });
    });

    it('records a pod given with the mark in the same transaction, fenced alike', async () => {
      const sandbox = await created(sandboxInput(1));
      const ref = { ...firstExecution(sandbox.id), operationId: sandbox.operationId };
      const pod = { name: 'warm-base-0001', uid: 'uid-warm', createPath: 'warm' as const };

      const marked = await statementsDuring(() =>
        store.markSandboxRunning({ ...ref, podIp: '10.0.0.7', pod }),
      );
      const listed = marked.statements.join('\n');
      expect(
        marked.statements.filter((sql) => /^\s*begin\b/i.test(sql)),
        listed,
      ).toHaveLength(1);
      expect(marked.statements.filter(readsSandboxes), listed).toHaveLength(1);
      const stored = await store.getSandboxById(sandbox.id);
      expect(stored).toMatchObject({
        state: 'running',
        pod: { name: 'warm-base-0001', uid: 'uid-warm', ip: '10.0.0.7' },
      });
      expect(marked.result).toEqual({ result: 'marked', sandbox: stored });
      expect((await store.getOperation('acme', sandbox.operationId))?.createPath).toBe('warm');

      // A retry whose first attempt committed: already running, answered as it is now.
      const again = await store.markSandboxRunning({ ...ref, podIp: '10.0.0.7', pod });
      expect(again).toEqual({
        result: 'already_running',
        sandbox: await store.getSandboxById(sandbox.id),
      });
      // A superseded execution records no pod.
      const other = { name: 'warm-base-0002', uid: 'uid-other' };
      expect(
        await store.markSandboxRunning({ ...ref, attempt: 2, podIp: '10.0.0.8', pod: other }),
      ).toEqual({ result: 'fenced' });
      expect((await store.getSandboxById(sandbox.id))?.pod.uid).toBe('uid-warm');
    });

    it('records a pod given with a mark that an outcome recorded first fences', async () => {
      const sandbox = await created(sandboxInput(1));
      const ref = { ...firstExecution(sandbox.id), operationId: sandbox.operationId };
      await store.recordOperationOutcome({
        operationId: sandbox.operationId,
        status: 'cancelled',
        error: { code: 'cancelled', message: 'cancelled', details: {} },
      });
      const pod = { name: 'warm-base-0001', uid: 'uid-warm' };
      expect(await store.markSandboxRunning({ ...ref, podIp: '10.0.0.7', pod })).toEqual({
        result: 'fenced',
      });
      // As recordPod then markSandboxRunning: the pod is the sandbox's, for compensation to find.
      expect(await store.getSandboxById(sandbox.id)).toMatchObject({
        state: 'failed',
        pod: { uid: 'uid-warm', ip: null },
      });
    });

    it('answers false for a sandbox that does not exist', async () => {
      expect(await markResult({ ...firstExecution('sbx_9999'), podIp: '10.0.0.7' })).toBe('fenced');
    });
  });

  describe('retireExecution', () => {
    const failure = {
      code: 'invalid_request',
      message: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
    };

    it('retires the execution and marks the sandbox failed with code and message', async () => {
      await created(sandboxInput(1));

      const result = await store.retireExecution({
        ...firstExecution('sbx_0001'),
        reason: 'invalid_request',
        failure,
      });

      expect(result).toEqual({ retired: true });
      const sandbox = await store.getSandboxById('sbx_0001');
      expect(sandbox?.state).toBe('failed');
      expect(sandbox?.failure).toEqual(failure);
    });

    it('does nothing the second time', async () => {
      await created(sandboxInput(1));
      const input = { ...firstExecution('sbx_0001'), reason: 'invalid_request', failure };
      await store.retireExecution(input);
      const afterFirst = await store.getSandboxById('sbx_0001');

      expect(
        await store.retireExecution({ ...input, failure: { code: 'internal', message: 'late' } }),
      ).toEqual({ retired: false });
      expect(await store.getSandboxById('sbx_0001')).toEqual(afterFirst);
    });

    it('leaves everything alone when retiring an older attempt while a newer one exists', async () => {
      await created(sandboxInput(1));
      await insertActiveExecution('sbx_0001', 1, 2);

      const result = await store.retireExecution({
        ...firstExecution('sbx_0001'),
        reason: 'pod_failed',
        failure: { code: 'pod_failed', message: 'stale' },
      });

      expect(result).toEqual({ retired: false });
      const sandbox = await store.getSandboxById('sbx_0001');
      expect(sandbox?.state).toBe('creating');
      expect(sandbox?.failure).toBeNull();
      // The newer attempt is the current one: it may still write.
      expect(
        await markResult({
          sandboxId: 'sbx_0001',
          generation: 1,
          attempt: 2,
          podIp: '10.0.0.9',
        }),
      ).toBe('marked');
    });

    it('does nothing for an execution that does not exist', async () => {
      await created(sandboxInput(1));

      const result = await store.retireExecution({
        sandboxId: 'sbx_0001',
        generation: 3,
        attempt: 1,
        reason: 'pod_failed',
        failure,
      });

      expect(result).toEqual({ retired: false });
      expect((await store.getSandboxById('sbx_0001'))?.state).toBe('creating');
    });

    it('marks the sandbox deleted when the reason is deleted and there is no failure', async () => {
      await created(sandboxInput(1));
      await store.markSandboxRunning({ ...firstExecution('sbx_0001'), podIp: '10.0.0.7' });

      const result = await store.retireExecution({
        ...firstExecution('sbx_0001'),
        reason: 'deleted',
        failure: null,
      });

      expect(result).toEqual({ retired: true });
      const sandbox = await store.getSandboxById('sbx_0001');
      expect(sandbox?.state).toBe('deleted');
      expect(sandbox?.failure).toBeNull();
    });

    it('keeps a retired sandbox failed: markSandboxRunning and recordPod write nothing', async () => {
      await created(sandboxInput(1));
      await store.retireExecution({ ...firstExecution('sbx_0001'), reason: 'cancelled', failure });

      expect(await markResult({ ...firstExecution('sbx_0001'), podIp: '10.0.0.7' })).toBe('fenced');
      expect(
        await store.recordPod({
          ...firstExecution('sbx_0001'),
          podName: 'late',
          podUid: 'uid-late',
        }),
      ).toBe(false);
      const sandbox = await store.getSandboxById('sbx_0001');
      expect(sandbox?.state).toBe('failed');
      expect(sandbox?.pod).toEqual({ name: null, uid: null, ip: null });
    });

    it('retires exactly once when ten calls race', async () => {
      await created(sandboxInput(1));

      const results = await Promise.all(
        Array.from({ length: 10 }, (_, n) =>
          store.retireExecution({
            ...firstExecution('sbx_0001'),
            reason: 'pod_never_ready',
            failure: { code: 'pod_never_ready', message: `call ${n}` },
          }),
        ),
      );

      expect(results.filter((result) => result.retired)).toHaveLength(1);
      expect((await store.getSandboxById('sbx_0001'))?.state).toBe('failed');
    });
  });

  describe('retireExecution from two workers', () => {
    it('two workers retiring the same execution at once leave exactly one retirement', async () => {
      // Two stores with their own connections (PostgreSQL: two pools), as two worker processes
      // have; each retires each of ten sandboxes at the same moment as the other.
      const other = await openStore(target.options);
      try {
        const ids: string[] = [];
        for (let n = 1; n <= 10; n++) ids.push((await created(sandboxInput(n))).id);

        const races = await Promise.all(
          ids.map((id) =>
            Promise.all(
              [store, other].map((worker, w) =>
                worker.retireExecution({
                  ...firstExecution(id),
                  reason: 'pod_never_ready',
                  failure: { code: 'pod_never_ready', message: `worker ${w}` },
                }),
              ),
            ),
          ),
        );

        for (const [n, results] of races.entries()) {
          const id = ids[n] as string;
          const winners = results.flatMap((result, w) => (result.retired ? [w] : []));
          expect(winners, `retired results for ${id}`).toHaveLength(1);
          // The sandbox carries the winner's failure: the loser wrote nothing.
          expect(await other.getSandboxById(id)).toMatchObject({
            state: 'failed',
            failure: { code: 'pod_never_ready', message: `worker ${winners[0]}` },
          });
        }
        const { db } = openDatabase(target.options);
        try {
          const executions = await db
            .selectFrom('executions')
            .select(['sandbox_id', 'state'])
            .orderBy('sandbox_id')
            .execute();
          expect(executions).toEqual(ids.map((id) => ({ sandbox_id: id, state: 'retired' })));
        } finally {
          await db.destroy();
        }
      } finally {
        await other.close();
      }
    });
  });

  describe('markSandboxFailed', () => {
    it('fails a creating sandbox and fences out its execution', async () => {
      await created(sandboxInput(1));

      expect(
        await store.markSandboxFailed({
          sandboxId: 'sbx_0001',
          code: 'internal',
          message: 'the workflow could not be started',
        }),
      ).toBe(true);

      const sandbox = await store.getSandboxById('sbx_0001');
      expect(sandbox?.state).toBe('failed');
      expect(sandbox?.failure).toEqual({
        code: 'internal',
        message: 'the workflow could not be started',
      });
      expect(await markResult({ ...firstExecution('sbx_0001'), podIp: '10.0.0.7' })).toBe('fenced');
      expect(
        await store.retireExecution({ ...firstExecution('sbx_0001'), reason: 'x', failure: null }),
      ).toEqual({ retired: false });
    });

    it('leaves a running sandbox alone', async () => {
      await created(sandboxInput(1));
      await store.markSandboxRunning({ ...firstExecution('sbx_0001'), podIp: '10.0.0.7' });

      expect(
        await store.markSandboxFailed({ sandboxId: 'sbx_0001', code: 'internal', message: 'x' }),
      ).toBe(false);
      expect((await store.getSandboxById('sbx_0001'))?.state).toBe('running');
    });
  });

  describe('markRunningSandboxesLost', () => {
    it('marks running sandboxes lost with why and when, retires their executions, and leaves the others', async () => {
      await created(sandboxInput(1));
      await store.markSandboxRunning({ ...firstExecution('sbx_0001'), podIp: '10.0.0.7' });
      await created(sandboxInput(2)); // still creating: its workflow decides
      await created(sandboxInput(3, { tenant: 'other' }));
      await store.markSandboxRunning({ ...firstExecution('sbx_0003'), podIp: '10.0.0.9' });
      const before = await store.getSandboxById('sbx_0001');

      const lost = await store.markRunningSandboxesLost({ reason: 'the cluster was rebuilt' });
      expect(lost.sort()).toEqual(['sbx_0001', 'sbx_0003']);
      const sandbox = await store.getSandboxById('sbx_0001');
      expect(sandbox).toMatchObject({
        state: 'lost',
        failure: { code: 'pod_lost', message: 'the cluster was rebuilt' },
        pod: { ip: null },
      });
      expect(Date.parse(sandbox!.updatedAt)).toBeGreaterThan(Date.parse(before!.updatedAt));
      expect((await store.getSandboxById('sbx_0002'))?.state).toBe('creating');
      // Its execution is retired: a late write of the create is fenced out.
      expect(
        await store.retireExecution({ ...firstExecution('sbx_0001'), reason: 'x', failure: null }),
      ).toEqual({ retired: false });
      expect(
        (await store.listSandboxes('acme', { state: 'lost', limit: 10 })).sandboxes,
      ).toHaveLength(1);
      // A lost sandbox can still be deleted.
      expect(await store.markSandboxDeleted({ sandboxId: 'sbx_0001' })).toBe(true);
      expect(await store.markRunningSandboxesLost({ reason: 'again' })).toEqual([]);
    });

    it("lists the pods of the sandboxes still creating, whatever their tenant, and no other's", async () => {
      const pod = (n: number) => ({ podName: `sbx-${n}-g1`, podUid: `uid-${n}` });
      await created(sandboxInput(1));
      await store.recordPod({ ...firstExecution('sbx_0001'), ...pod(1) });
      await created(sandboxInput(2, { tenant: 'other' }));
      await store.recordPod({ ...firstExecution('sbx_0002'), ...pod(2) });
      await created(sandboxInput(3)); // no pod yet
      await created(sandboxInput(4));
      await store.recordPod({ ...firstExecution('sbx_0004'), ...pod(4) });
      await store.markSandboxRunning({ ...firstExecution('sbx_0004'), podIp: '10.0.0.4' });
      expect(await store.listCreatingPodUids()).toEqual(['uid-1', 'uid-2']);
      expect(await store.listCreatingPodUids(1)).toEqual(['uid-1']);
    });

    it('the migration that adds the state keeps every sandbox and execution row', async () => {
      await created(sandboxInput(1));
      await store.markSandboxRunning({ ...firstExecution('sbx_0001'), podIp: '10.0.0.7' });
      await created(sandboxInput(2));
      const { db } = openDatabase(target.options);
      const count = async (table: 'sandboxes' | 'executions') =>
        Number(
          (await sql<{ n: number }>`select count(*) as n from ${sql.table(table)}`.execute(db))
            .rows[0]?.n,
        );
      try {
        const migration = MIGRATIONS['0002-sandbox-state-lost']!;
        // Undone in reverse order: the later migrations that add sandboxes columns first.
        const labels = MIGRATIONS['0018-sandbox-labels']!;
        const lifetimes = MIGRATIONS['0014-sandbox-lifetimes']!;
        const cpuMillicores = MIGRATIONS['0008-sandbox-cpu-millicores']!;
        await labels.down!(db as never);
        await lifetimes.down!(db as never);
        await cpuMillicores.down!(db as never);
        await migration.down!(db as never);
        await expect(
          sql`update sandboxes set state = 'lost' where id = 'sbx_0001'`.execute(db),
        ).rejects.toThrow();
        await migration.up(db as never);
        await cpuMillicores.up(db as never);
        await lifetimes.up(db as never);
        await labels.up(db as never);
        expect(await count('sandboxes')).toBe(2);
        expect(await count('executions')).toBe(2);
      } finally {
        await db.destroy();
      }
      expect(await store.markRunningSandboxesLost({ reason: 'gone' })).toEqual(['sbx_0001']);
      expect((await store.getSandboxById('sbx_0002'))?.state).toBe('creating');
    });
  });

  describe('cpu in millicores', () => {
    it('keeps a fractional cpu exactly, and writes whole cores rounded up beside it', async () => {
      await created(sandboxInput(1, { resources: { ...RESOURCES, cpu: 0.25 } }));
      await created(sandboxInput(2, { resources: { ...RESOURCES, cpu: 1.001 } }));
      expect((await store.getSandboxById('sbx_0001'))?.resources.cpu).toBe(0.25);
      expect((await store.getSandboxById('sbx_0002'))?.resources.cpu).toBe(1.001);
      const { db } = openDatabase(target.options);
      try {
        const rows = await db
          .selectFrom('sandboxes')
          .select(['id', 'cpu', 'cpu_millicores'])
          .orderBy('id')
          .execute();
        expect(rows).toEqual([
          { id: 'sbx_0001', cpu: 1, cpu_millicores: 250 },
          { id: 'sbx_0002', cpu: 2, cpu_millicores: 1001 },
        ]);
      } finally {
        await db.destroy();
      }
    });

    it('the cpu migration fills millicores from whole cores; a row of the release before reads as its cores', async () => {
      const { db } = openDatabase(target.options);
      try {
        const migration = MIGRATIONS['0008-sandbox-cpu-millicores']!;
        await migration.down!(db as never);
        // A row as the release before writes it: whole cores, no millicores column.
        await sql`insert into sandboxes (id, tenant, template, cpu, memory_mib, disk_mib, state,
          generation, operation_id, created_at, updated_at) values ('sbx_0001', 'acme', 'base', 3,
          256, 2048, 'creating', 1, 'op_0001', '2025-01-01T00:00:00.000Z',
          '2025-01-01T00:00:00.000Z')`.execute(db);
        await migration.up(db as never);
        // Written by a process of the release before during a rolling upgrade: millicores null.
        await sql`insert into sandboxes (id, tenant, template, cpu, memory_mib, disk_mib, state,
          generation, operation_id, created_at, updated_at) values ('sbx_0002', 'acme', 'base', 2,
          256, 2048, 'creating', 1, 'op_0002', '2025-01-01T00:00:00.000Z',
          '2025-01-01T00:00:00.000Z')`.execute(db);
        const filled = await db
          .selectFrom('sandboxes')
          .select(['id', 'cpu_millicores'])
          .orderBy('id')
          .execute();
        expect(filled).toEqual([
          { id: 'sbx_0001', cpu_millicores: 3000 },
          { id: 'sbx_0002', cpu_millicores: null },
        ]);
      } finally {
        await db.destroy();
      }
      expect((await store.getSandboxById('sbx_0001'))?.resources.cpu).toBe(3);
      expect((await store.getSandboxById('sbx_0002'))?.resources.cpu).toBe(2);
    });
  });

  describe('rootfs floors', () => {
    const floor = (rootfsMib: number, learnedAtMs: number, image = 'example.test/base:1') => ({
      image,
      template: 'base',
      rootfsMib,
      learnedAtMs,
      operationId: `op_${rootfsMib}`,
      tenantId: 'acme',
      nodeName: 'node-1',
      reason: `rootfs_size_mb=300 is smaller than cloned rootfs size ${rootfsMib} MiB`,
    });
    const at = Date.parse('2026-11-30T12:00:00.000Z');

    it('keeps one floor per image, and the newest evidence wins', async () => {
      expect(await store.recordRootfsFloor(floor(451, at))).toBe(true);
      expect(await store.recordRootfsFloor(floor(500, at + 1_000))).toBe(true);
      // Older evidence, recorded later (a retried retirement), changes nothing.
      expect(await store.recordRootfsFloor(floor(400, at - 1_000))).toBe(false);
      expect(await store.listRootfsFloors(['example.test/base:1'])).toEqual([
        floor(500, at + 1_000),
      ]);
      // Evidence of the same time: the later write wins.
      expect(await store.recordRootfsFloor(floor(520, at + 1_000))).toBe(true);
      expect((await store.listRootfsFloors(['example.test/base:1']))[0]?.rootfsMib).toBe(520);
    });

    it('lists only the images asked for, and none for an image without a floor', async () => {
      await store.recordRootfsFloor(floor(451, at, 'example.test/a:1'));
      await store.recordRootfsFloor(floor(300, at, 'example.test/b:1'));
      expect(await store.listRootfsFloors(['example.test/b:1', 'example.test/c:1'])).toEqual([
        floor(300, at, 'example.test/b:1'),
      ]);
      expect(await store.listRootfsFloors([])).toEqual([]);
    });

    it('never learns a floor above a disk the image ran with; a run below a floor forgets it', async () => {
      const image = 'example.test/healing:1';
      expect(await store.recordRootfsFloor(floor(1_048_576, at, image))).toBe(true);
      // A sandbox of the image ran with 2048 MiB: the floor above it was wrong, and goes.
      const forgotten = await store.noteImageRan({ image, diskMib: 2048, atMs: at + 1_000 });
      expect(forgotten?.rootfsMib).toBe(1_048_576);
      expect(await store.listRootfsFloors([image])).toEqual([]);
      // Newer evidence above the disk it ran with is not learned; at or below it, it is.
      expect(await store.recordRootfsFloor(floor(4096, at + 2_000, image))).toBe(false);
      expect(await store.listRootfsFloors([image])).toEqual([]);
      expect(await store.recordRootfsFloor(floor(451, at + 3_000, image))).toBe(true);
      // A larger disk later keeps the smallest: 4096 is still above what the image ran with.
      expect(await store.noteImageRan({ image, diskMib: 8192, atMs: at + 4_000 })).toBeUndefined();
      expect(await store.recordRootfsFloor(floor(4096, at + 5_000, image))).toBe(false);
      // A floor at or below the disk stays.
      expect(await store.noteImageRan({ image, diskMib: 451, atMs: at + 6_000 })).toBeUndefined();
      expect((await store.listRootfsFloors([image]))[0]?.rootfsMib).toBe(451);
    });

    it('notes a run that changes nothing with one read and no write', async () => {
      const image = 'example.test/noted:1';
      await store.noteImageRan({ image, diskMib: 2048, atMs: at });
      expect(await store.recordRootfsFloor(floor(451, at + 1_000, image))).toBe(true);

      // Ran before with a smaller disk, its floor below: nothing to keep or forget.
      const again = await statementsDuring(() =>
        store.noteImageRan({ image, diskMib: 4096, atMs: at + 2_000 }),
      );
      expect(again.result).toBeUndefined();
      const listed = again.statements.join('\n');
      expect(
        again.statements.filter((sql) => /^\s*select\b/i.test(sql)),
        listed,
      ).toHaveLength(1);
      // No transaction, no write (PostgreSQL's LISTEN of the store's notifier is no concern).
      expect(
        again.statements.filter((sql) => /^\s*(begin|insert|update|delete)\b/i.test(sql)),
        listed,
      ).toEqual([]);

      // A smaller disk is still kept: a floor above it is no longer learned.
      const smaller = await statementsDuring(() =>
        store.noteImageRan({ image, diskMib: 1024, atMs: at + 3_000 }),
      );
      expect(smaller.statements.some((sql) => /insert into "image_run_disks"/i.test(sql))).toBe(
        true,
      );
      expect(await store.recordRootfsFloor(floor(1536, at + 4_000, image))).toBe(false);
      expect((await store.listRootfsFloors([image]))[0]?.rootfsMib).toBe(451);
    });

    it('lets one probe through an old floor per interval, only for the floor as read', async () => {
      const image = 'example.test/probe:1';
      const hour = 3_600_000;
      await store.recordRootfsFloor(floor(451, at, image));
      const probe = (nowMs: number, learnedAtMs = at) =>
        store.claimRootfsFloorProbe({ image, learnedAtMs, nowMs, afterMs: hour });
      // Young: closed.
      expect(await probe(at + hour - 1)).toBe(false);
      // Old: one claim wins, the next within the hour does not (another replica included).
      expect(await probe(at + hour)).toBe(true);
      const second = await openStore(options);
      try {
        expect(
          await second.claimRootfsFloorProbe({
            image,
            learnedAtMs: at,
            nowMs: at + hour + 1,
            afterMs: hour,
          }),
        ).toBe(false);
      } finally {
        await second.close();
      }
      expect(await probe(at + 2 * hour - 1)).toBe(false);
      // An hour after the last probe, the next.
      expect(await probe(at + 2 * hour)).toBe(true);
      // A floor read before it was learned anew is not the stored one.
      expect(await probe(at + 5 * hour, at - 1)).toBe(false);
      // New evidence closes it again for an hour from its own time.
      expect(await store.recordRootfsFloor(floor(451, at + 4 * hour, image))).toBe(true);
      expect(await probe(at + 5 * hour - 1, at + 4 * hour)).toBe(false);
      expect(await probe(at + 5 * hour, at + 4 * hour)).toBe(true);
      // No floor, no probe.
      expect(
        await store.claimRootfsFloorProbe({
          image: 'example.test/none:1',
          learnedAtMs: at,
          nowMs: at + 9 * hour,
          afterMs: hour,
        }),
      ).toBe(false);
    });

    it('shares floors between two stores on one database', async () => {
      const second = await openStore(options);
      try {
        await store.recordRootfsFloor(floor(451, at));
        expect(await second.listRootfsFloors(['example.test/base:1'])).toEqual([floor(451, at)]);
      } finally {
        await second.close();
      }
    });
  });

  describe('waiting pods', () => {
    const recordPod = (n: number) =>
      store.recordPod({
        ...firstExecution(`sbx_0${n}`),
        podName: `sbx-0${n}-g1`,
        podUid: `uid-${n}`,
        operationId: `op_0${n}`,
      });

    it('lists the creates waiting for an IP with their pod, oldest first, in keyset pages', async () => {
      for (const n of [301, 302, 303, 304, 305, 306]) await created(sandboxInput(n));
      for (const n of [303, 301, 305, 302, 304]) await recordPod(n); // 306 is still creating its pod
      const seen: string[][] = [];
      let after: { updatedAt: string; operationId: string } | undefined;
      for (;;) {
        const page = await store.listWaitingPods({ limit: 2, after });
        seen.push(page.map((w) => w.operationId));
        const last = page[page.length - 1];
        if (page.length < 2 || !last) break;
        after = last;
      }
      expect(seen.flat()).toEqual(['op_0303', 'op_0301', 'op_0305', 'op_0302', 'op_0304']);
      expect(seen.map((page) => page.length)).toEqual([2, 2, 1]);
      expect((await store.listWaitingPods({ limit: 10 }))[0]).toMatchObject({
        operationId: 'op_0303',
        workflowId: 'op_0303',
        sandboxId: 'sbx_0303',
        podName: 'sbx-0303-g1',
        podUid: 'uid-303',
      });
    });

    it('a create leaves the list when it is marked running, decided or retired', async () => {
      for (const n of [201, 202, 203, 204]) {
        await created(sandboxInput(n));
        await recordPod(n);
      }
      await store.markSandboxRunning({
        ...firstExecution('sbx_0201'),
        podIp: '10.0.0.1',
        operationId: 'op_0201',
      });
      await store.recordOperationOutcome({
        operationId: 'op_0202',
        status: 'cancelled',
        error: { code: 'cancelled', message: 'cancelled', details: {} },
      });
      await store.retireExecution({
        ...firstExecution('sbx_0203'),
        operationId: 'op_0203',
        reason: 'pod_failed',
        failure: { code: 'pod_failed', message: 'gone' },
      });
      const waiting = await store.listWaitingPods({ limit: 10 });
      expect(waiting.map((w) => w.operationId)).toEqual(['op_0204']);
    });
  });

  describe('operations', () => {
    const outcome = {
      status: 'failed' as const,
      error: { code: 'invalid_request', message: 'refused', details: { podName: 'p' } },
    };

    it('moves an operation only forward, and its first outcome wins', async () => {
      const sandbox = await created(sandboxInput(101));
      expect(await store.getOperation(sandbox.tenant, 'op_0101')).toMatchObject({
        status: 'running',
        phase: 'creating_pod',
        done: false,
        sandbox: { id: 'sbx_0101' },
      });
      expect(await store.recordOperationOutcome({ operationId: 'op_0101', ...outcome })).toBe(true);
      // A late write of an earlier phase changes nothing.
      expect(await store.advanceOperation('op_0101', { phase: 'waiting_for_ip' })).toBe(false);
      await store.retireExecution({
        sandboxId: 'sbx_0101',
        generation: 1,
        attempt: 1,
        operationId: 'op_0101',
        reason: 'cancelled',
        failure: { code: 'cancelled', message: 'late' },
      });
      expect(await store.getOperation(sandbox.tenant, 'op_0101')).toMatchObject({
        status: 'failed',
        phase: 'finished',
        done: true,
        error: { code: 'invalid_request', message: 'refused', details: { podName: 'p' } },
      });
    });

    it('an outcome fenced by a pod uid is written only while the sandbox records that pod', async () => {
      const sandbox = await created(sandboxInput(105));
      const ref = { ...firstExecution(sandbox.id), operationId: sandbox.operationId };
      // No pod recorded yet, then another pod: nothing is written.
      const fenced = { operationId: 'op_0105', ...outcome, podUid: 'uid-105' };
      expect(await store.recordOperationOutcome(fenced)).toBe(false);
      await store.recordPod({ ...ref, podName: 'sbx-105-g1', podUid: 'uid-other' });
      expect(await store.recordOperationOutcome(fenced)).toBe(false);
      expect(await store.getOperation(sandbox.tenant, 'op_0105')).toMatchObject({
        status: 'running',
        error: null,
      });
      // The pod the create made: written.
      await store.recordPod({ ...ref, podName: 'sbx-105-g1', podUid: 'uid-105' });
      expect(await store.recordOperationOutcome(fenced)).toBe(true);
      expect(await store.getOperation(sandbox.tenant, 'op_0105')).toMatchObject({
        status: 'failed',
        phase: 'compensating',
        error: outcome.error,
      });
    });

    it("moves the create's sandbox from creating to failed with the outcome its operation kept, in the same write", async () => {
      const sandbox = await created(sandboxInput(107));
      expect(await store.recordOperationOutcome({ operationId: 'op_0107', ...outcome })).toBe(true);
      expect(await store.getSandboxById(sandbox.id)).toMatchObject({
        state: 'failed',
        failure: { code: 'invalid_request', message: 'refused' },
      });
      // A later outcome (the deadline's) changes neither: the first one stands on both.
      const late = {
        status: 'cancelled' as const,
        error: { code: 'cancelled', message: 'x', details: {} },
      };
      expect(await store.recordOperationOutcome({ operationId: 'op_0107', ...late })).toBe(false);
      expect(await store.getSandboxById(sandbox.id)).toMatchObject({
        state: 'failed',
        failure: { code: 'invalid_request', message: 'refused' },
      });
      expect(await store.getOperation(sandbox.tenant, 'op_0107')).toMatchObject({
        status: 'failed',
        error: outcome.error,
      });
    });

    it('a sandbox is not marked running under an operation whose outcome was recorded first, and the reconcile still lists that create', async () => {
      const sandbox = await created(sandboxInput(106));
      const ref = { ...firstExecution(sandbox.id), operationId: sandbox.operationId };
      await store.recordPod({ ...ref, podName: 'sbx-106-g1', podUid: 'uid-106' });
      expect(
        await store.recordOperationOutcome({
          operationId: 'op_0106',
          ...outcome,
          podUid: 'uid-106',
        }),
      ).toBe(true);
      // Left waiting_for_ip, not yet retired: the reconcile's second list holds it.
      expect(await store.listWaitingPods({ limit: 10 })).toEqual([]);
      expect(
        (await store.listWaitingPods({ limit: 10, outcomeRecorded: true })).map((w) => w.podUid),
      ).toEqual(['uid-106']);
      // An IP after the recorded refusal: the outcome stands, the sandbox is not running.
      expect(await markResult({ ...ref, podIp: '10.0.0.106' })).toBe('fenced');
      expect(await store.getSandboxById(sandbox.id)).toMatchObject({ state: 'failed' });
      // Once compensation retired it, the create leaves that list too.
      await store.retireExecution({
        ...ref,
        reason: 'invalid_request',
        failure: { code: 'invalid_request', message: 'refused' },
      });
      expect(await store.listWaitingPods({ limit: 10, outcomeRecorded: true })).toEqual([]);
    });

    /** A create of sandbox `n` that succeeded on pod `sbx-<n>-g1` with IP 10.0.0.<n>. */
    async function succeededCreate(n: number) {
      const sandbox = await created(sandboxInput(n));
      const ref = { ...firstExecution(sandbox.id), operationId: sandbox.operationId };
      await store.recordPod({ ...ref, podName: `sbx-${n}-g1`, podUid: `uid-${n}` });
      expect(await markResult({ ...ref, podIp: `10.0.0.${n}` })).toBe('marked');
      return sandbox;
    }

    it("keeps a succeeded create's result as the create left it: running with its IP, after the sandbox is deleted or lost", async () => {
      const deleted = await succeededCreate(11);
      const lost = await succeededCreate(12);
      const whenCreated = (await store.getOperation('acme', 'op_0011'))?.result?.sandbox;
      expect(whenCreated).toMatchObject({
        state: 'running',
        pod: { name: 'sbx-11-g1', uid: 'uid-11', ip: '10.0.0.11' },
        failure: null,
      });

      await store.beginDelete({
        id: 'op_delete_0011',
        tenant: 'acme',
        sandboxId: deleted.id,
        cause: 'requested',
      });
      expect(
        await store.markSandboxDeleted({ sandboxId: deleted.id, operationId: 'op_delete_0011' }),
      ).toBe(true);
      expect(
        await store.markSandboxLost({ sandboxId: lost.id, podUid: 'uid-12', reason: 'gone' }),
      ).toBe(true);

      const create = await store.getOperation('acme', 'op_0011');
      expect(create).toMatchObject({ status: 'succeeded', sandbox: { state: 'deleted' } });
      expect(create?.result?.sandbox).toEqual(whenCreated);
      expect((await store.getOperation('acme', 'op_0012'))?.result?.sandbox).toMatchObject({
        state: 'running',
        pod: { ip: '10.0.0.12' },
        failure: null,
      });
      // A delete's result is the sandbox it deleted.
      expect((await store.getOperation('acme', 'op_delete_0011'))?.result?.sandbox).toMatchObject({
        id: deleted.id,
        state: 'deleted',
        pod: { name: 'sbx-11-g1', ip: null },
      });
      // A create that failed has none.
      await created(sandboxInput(13));
      await store.recordOperationOutcome({ operationId: 'op_0013', ...outcome });
      expect((await store.getOperation('acme', 'op_0013'))?.result).toBeNull();
    });

    it('the result migration keeps the results of operations that ended before it', async () => {
      // Ended before the migration: one whose sandbox still runs, one whose sandbox was deleted.
      const running = await succeededCreate(21);
      const before = await store.getOperation('acme', 'op_0021');
      const deletedBefore = await succeededCreate(22);
      await store.markSandboxDeleted({ sandboxId: deletedBefore.id });
      const { db } = openDatabase(target.options);
      const migration = MIGRATIONS['0010-operation-result']!;
      try {
        await migration.down!(db as never);
        await migration.up(db as never);
      } finally {
        await db.destroy();
      }
      // Deleted after the migration: its result is still the one it had, IP included.
      await store.markSandboxDeleted({ sandboxId: running.id });
      expect((await store.getOperation('acme', 'op_0021'))?.result).toEqual(before?.result);
      // Its sandbox already moved on: rebuilt as the create left it; the cleared IP is unknown.
      const rebuilt = await store.getOperation('acme', 'op_0022');
      expect(rebuilt?.result?.sandbox).toEqual({
        ...rebuilt?.sandbox,
        state: 'running',
        failure: null,
        updatedAt: rebuilt?.updatedAt,
      });
      expect(rebuilt?.result?.sandbox.pod).toEqual({ name: 'sbx-22-g1', uid: 'uid-22', ip: null });
    });

    it('appends refused placements once each, and only while the create runs', async () => {
      const sandbox = await created(sandboxInput(103));
      const placement = (n: number) => ({
        placement: n,
        nodeName: `node-${n}`,
        code: 'ResourceExhausted',
        reason: 'no sandbox capacity left',
        at: `2025-01-01T00:00:0${n}.000Z`,
        podName: `sbx-0103-g1${n > 1 ? `-p${n}` : ''}`,
        podUid: `uid-${n}`,
      });
      expect(await store.recordPlacement('op_0103', placement(1))).toBe(true);
      // A retried step: the same placement again changes nothing.
      expect(await store.recordPlacement('op_0103', placement(1))).toBe(false);
      expect(await store.recordPlacement('op_0103', placement(2))).toBe(true);
      expect((await store.getOperation(sandbox.tenant, 'op_0103'))?.placements).toEqual([
        placement(1),
        placement(2),
      ]);
      await store.recordOperationOutcome({ operationId: 'op_0103', ...outcome });
      expect(await store.recordPlacement('op_0103', placement(3))).toBe(false);
      expect((await store.getOperation(sandbox.tenant, 'op_0103'))?.placements).toHaveLength(2);
      expect(await store.recordPlacement('op_missing', placement(1))).toBe(false);
    });

    it('wakes a waiter of the operation when it changes, from another store too', async () => {
      const sandbox = await created(sandboxInput(102));
      // PostgreSQL: a second store on the same database (another process) hears the NOTIFY.
      const listener = backend.name === 'postgres' ? await openStore(options) : store;
      try {
        // A sleep: the other store opens its LISTEN connection in the background and exposes no
        // sign of it (pg_stat_activity would show it: left for a change tested on PostgreSQL).
        await new Promise((resolve) => setTimeout(resolve, 300));
        const started = Date.now();
        const woken = listener.waitForOperationChange('op_0102', 20_000);
        await store.recordOperationOutcome({ operationId: 'op_0102', ...outcome });
        expect(await woken).toBe(true);
        expect(Date.now() - started).toBeLessThan(10_000);
        expect(await listener.waitForOperationChange('op_0102', 200)).toBe(false);
        expect((await listener.getOperation(sandbox.tenant, 'op_0102'))?.phase).toBe(
          'compensating',
        );
      } finally {
        if (listener !== store) await listener.close();
      }
    });
  });

  if (backend.name === 'postgres') {
    it('announces a burst of operation changes in fewer notifications than commits, waking every waiter', async () => {
      const count = 100;
      for (let n = 0; n < count; n++) await created(sandboxInput(200 + n));
      const ids = Array.from({ length: count }, (_, n) => `op_${String(200 + n).padStart(4, '0')}`);
      // What PostgreSQL delivered, counted by a LISTEN of our own on both channels.
      const counter = new pg.Client({ connectionString: target.options.databaseUrl });
      await counter.connect();
      let notifications = 0;
      counter.on('notification', () => (notifications += 1));
      await counter.query(`LISTEN ${OPERATION_CHANNEL}; LISTEN ${LEGACY_OPERATION_CHANNEL}`);
      const listener = await openStore(options); // another process's store
      try {
        // A sleep: as above, the other store's LISTEN connection opens in the background.
        await new Promise((resolve) => setTimeout(resolve, 300));
        const woken = ids.map((id) => listener.waitForOperationChange(id, 20_000));
        const outcome = {
          status: 'failed' as const,
          error: { code: 'internal', message: 'x', details: {} },
        };
        await Promise.all(
          ids.map((operationId) => store.recordOperationOutcome({ operationId, ...outcome })),
        );
        expect(await Promise.all(woken)).toEqual(ids.map(() => true));
        // A sleep: late notifications must reach the counter too, for its upper bound below.
        await new Promise((resolve) => setTimeout(resolve, 300));
        // One notifying commit per write would be `count` (each takes PostgreSQL's global
        // notification lock); coalesced, a burst from one pool needs a handful.
        expect(notifications).toBeGreaterThan(0);
        expect(notifications).toBeLessThan(count / 2);
      } finally {
        await listener.close();
        await counter.end();
      }
    });
  }

  describe('findIdempotencyKey', () => {
    it('reads the create that claimed a key, and nothing for an unused one', async () => {
      await store.createSandbox({
        ...sandboxInput(1),
        idempotency: { key: 'k1', requestHash: 'h1' },
      });
      expect(await store.findIdempotencyKey('acme', 'k1')).toEqual({
        requestHash: 'h1',
        operationId: 'op_0001',
        sandboxId: 'sbx_0001',
      });
      expect(await store.findIdempotencyKey('acme', 'k2')).toBeUndefined();
    });
  });

  describe('ping', () => {
    it('resolves while open and rejects once closed', async () => {
      await expect(store.ping()).resolves.toBeUndefined();
      await store.close();

      await expect(store.ping()).rejects.toThrow();
      store = await openStore(options);
    });
  });
});
