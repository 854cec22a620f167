/**
 * Rows that age out (src/store/retention.ts, migration 0023) on SQLite and PostgreSQL: each kind is
 * purged after its retention and not before; nothing unfinished is purged (a sandbox with a
 * running operation, a running operation, an event an endpoint is still delivering); one batch
 * removes at most its limit (counted in the database); the newest event stays, so the feed's
 * numbers never start again.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { sql, type Kysely } from 'kysely';
import type { RetentionKind, WebhookEventRef } from '../contract/index.js';
import { openDatabase } from '../src/store/database.js';
import type { Database } from '../src/store/schema.js';
import { openStore, type Store } from '../src/store/index.js';
import { storeBackends, type StoreTarget } from './support/store.js';

const DAY_MS = 86_400_000;
const OLD = Date.parse('2025-01-01T00:00:00.000Z');
const NOW = OLD + 60 * DAY_MS;
/** The cutoff of a 30-day retention at NOW. */
const BEFORE = new Date(NOW - 30 * DAY_MS).toISOString();

/** A clock that moves 1 ms per reading; `set(ms)` puts it at a time. */
function settableClock(): (() => Date) & { set(ms: number): void } {
  let ms = OLD;
  return Object.assign(() => new Date((ms += 1)), { set: (to: number) => void (ms = to) });
}

const ref = (n: number): WebhookEventRef => ({
  id: `evt_${n}`,
  type: 'sandbox.running',
  sandboxId: 'sbx_1',
});

describe.each(storeBackends())('retention purges on $name', (backend) => {
  let target: StoreTarget;
  let store: Store;
  let db: Kysely<Database>;
  let clock: ReturnType<typeof settableClock>;
  beforeEach(async () => {
    target = await backend.freshTarget();
    clock = settableClock();
    store = await openStore({ ...target.options, clock });
    db = openDatabase(target.options).db;
  });
  afterEach(async () => {
    await db?.destroy();
    await store?.close();
    await target?.dispose();
  });

  const purge = (kind: RetentionKind, limit = 100) =>
    store.retention.purgeBatch(kind, BEFORE, limit);

  async function rows(table: keyof Database): Promise<number> {
    const result = await sql<{
      n: number | string;
    }>`select count(*) as n from ${sql.table(table)}`.execute(db);
    return Number(result.rows[0]?.n);
  }

  /**
   * A sandbox created at `atMs` and left `creating` (its create running) or `failed` (its create
   * finished), then `deleted` (a finished delete) or with a delete still running.
   */
  async function sandbox(
    n: number,
    atMs: number,
    end: 'creating' | 'failed' | 'deleted' | 'failed, deleting' | 'lost',
    idempotencyKey?: string,
  ): Promise<string> {
    clock.set(atMs);
    const id = `sbx_${n}`;
    const outcome = await store.createSandbox({
      id,
      tenant: 'acme',
      template: 'base',
      resources: { cpu: 1, memoryMib: 1024, diskMib: 2048 },
      operationId: `op_${n}`,
      ...(idempotencyKey ? { idempotency: { key: idempotencyKey, requestHash: 'h' } } : {}),
    });
    expect(outcome.kind).toBe('created');
    if (end === 'creating') return id;
    if (end === 'lost') {
      // Ran, then its pod vanished (the orphan sweep's verdict); its create has finished.
      const execution = { sandboxId: id, generation: 1, attempt: 1, operationId: `op_${n}` };
      await store.recordPod({ ...execution, podName: `sbx-${n}`, podUid: `uid-${n}` });
      await store.markSandboxRunning({ ...execution, podIp: '10.0.0.1' });
      expect(
        await store.markSandboxLost({ sandboxId: id, podUid: `uid-${n}`, reason: 'gone' }),
      ).toBe(true);
      return id;
    }
    // Fails the sandbox and finishes its create.
    expect(
      await store.markSandboxFailed({ sandboxId: id, code: 'pod_failed', message: 'test' }),
    ).toBe(true);
    if (end === 'failed') return id;
    const del = await store.beginDelete({
      id: `op_${n}_del`,
      tenant: 'acme',
      sandboxId: id,
      cause: 'requested',
    });
    expect(del.inserted).toBe(true);
    if (end === 'deleted') {
      expect(await store.markSandboxDeleted({ sandboxId: id, operationId: del.operationId })).toBe(
        true,
      );
    }
    return id;
  }

  it('purges deleted, failed and lost sandboxes past the retention, with their executions, and keeps the rest', async () => {
    await sandbox(1, OLD, 'failed');
    await sandbox(2, OLD, 'deleted');
    await sandbox(3, OLD, 'failed, deleting'); // its delete still runs
    await sandbox(4, OLD, 'creating');
    await sandbox(5, NOW - DAY_MS, 'failed'); // too young
    await sandbox(6, OLD, 'lost');
    await sandbox(7, NOW - DAY_MS, 'lost'); // too young
    clock.set(NOW);
    expect(await purge('sandboxes')).toBe(3);
    for (const purged of ['sbx_1', 'sbx_2', 'sbx_6']) {
      expect(await store.getSandboxById(purged), purged).toBeUndefined();
    }
    for (const kept of ['sbx_3', 'sbx_4', 'sbx_5', 'sbx_7']) {
      expect(await store.getSandboxById(kept), kept).toBeDefined();
    }
    // Executions go with their sandbox (on delete cascade).
    expect(await rows('executions')).toBe(4);
    expect(await purge('sandboxes')).toBe(0);
  });

  it('purges finished operations past the retention, and keeps running and young ones', async () => {
    await sandbox(1, OLD, 'failed');
    await sandbox(2, OLD, 'creating');
    await sandbox(3, NOW - DAY_MS, 'failed');
    clock.set(NOW);
    expect(await purge('operations')).toBe(1);
    expect(await store.getOperation('acme', 'op_1')).toBeUndefined();
    expect(await store.getOperation('acme', 'op_2')).toBeDefined();
    expect(await store.getOperation('acme', 'op_3')).toBeDefined();
  });

  it('purges idempotency keys past the retention: the key is free for a new create', async () => {
    await sandbox(1, OLD, 'creating', 'key-old');
    await sandbox(2, NOW - DAY_MS, 'creating', 'key-new');
    clock.set(NOW);
    expect(await purge('idempotency_keys')).toBe(1);
    expect(await store.findIdempotencyKey('acme', 'key-old')).toBeUndefined();
    expect(await store.findIdempotencyKey('acme', 'key-new')).toBeDefined();
  });

  it('keeps the newest event, so the next event is numbered after it', async () => {
    clock.set(OLD);
    for (const n of [1, 2, 3]) {
      await store.webhooks.recordEvent({ ...ref(n), tenant: 'acme', payload: '{}' });
    }
    clock.set(NOW);
    expect(await purge('events')).toBe(2);
    expect(await store.retention.purgedThroughSeq('acme')).toBe(2);
    await store.webhooks.recordEvent({ ...ref(4), tenant: 'acme', payload: '{}' });
    const events = await store.events.list('acme', { afterSeq: 0, limit: 10 });
    expect(events.map((event) => [event.id, event.seq])).toEqual([
      ['evt_3', 3],
      ['evt_4', 4],
    ]);
  });

  it("records each tenant's highest purged event number, and none for a tenant whose events were kept", async () => {
    for (const [n, tenant] of [
      [1, 'acme'],
      [2, 'globex'],
      [3, 'acme'],
    ] as const) {
      clock.set(OLD + n * 1_000);
      await store.webhooks.recordEvent({ ...ref(n), tenant, payload: '{}' });
    }
    clock.set(NOW);
    await store.webhooks.recordEvent({ ...ref(4), tenant: 'initech', payload: '{}' });
    // A batch of one (the oldest first), then the rest: the horizon only moves up.
    expect(await purge('events', 1)).toBe(1);
    expect(await store.retention.purgedThroughSeq('acme')).toBe(1);
    expect(await purge('events')).toBe(2);
    expect(await store.retention.purgedThroughSeq('acme')).toBe(3);
    expect(await store.retention.purgedThroughSeq('globex')).toBe(2);
    expect(await store.retention.purgedThroughSeq('initech')).toBeUndefined();
  });

  it('keeps an old event an endpoint is still delivering, and purges one whose delivery was given up', async () => {
    const endpointId = (
      await store.webhooks.createEndpoint({
        id: `whe_${'a'.repeat(26)}`,
        tenant: 'acme',
        url: 'https://hooks.example.com/1',
        eventTypes: ['sandbox.running'],
        secret: 'whsec_1',
      })
    ).id;
    clock.set(OLD);
    for (const n of [1, 2]) {
      await store.webhooks.recordEvent({ ...ref(n), tenant: 'acme', payload: '{}' });
    }
    await store.webhooks.trackEvent(ref(1), [endpointId]); // pending since OLD: given up
    clock.set(NOW - 60_000);
    await store.webhooks.recordEvent({ ...ref(3), tenant: 'acme', payload: '{}' });
    await store.webhooks.trackEvent(ref(2), [endpointId]);
    expect(await store.webhooks.claimEvent({ endpointId, event: ref(2), holder: 'a' })).toBe(true);
    clock.set(NOW);
    expect(await purge('events')).toBe(1);
    expect(await store.webhooks.getEvent('evt_1')).toBeUndefined();
    expect(await store.webhooks.getEvent('evt_2')).toBeDefined();
    // The given-up state is a delivery record: it goes with that kind; the delivering one stays.
    expect(await purge('webhook_deliveries')).toBe(1);
    expect(await store.webhooks.eventState(endpointId, 'evt_1')).toBeUndefined();
    expect(await store.webhooks.eventState(endpointId, 'evt_2')).toMatchObject({
      status: 'delivering',
    });
  });

  it('purges delivery attempts past the retention, at most the limit per batch', async () => {
    const endpointId = (
      await store.webhooks.createEndpoint({
        id: `whe_${'b'.repeat(26)}`,
        tenant: 'acme',
        url: 'https://hooks.example.com/2',
        eventTypes: ['sandbox.running'],
        secret: 'whsec_2',
      })
    ).id;
    const attempt = (n: number) => ({
      id: `whd_${n}`,
      endpointId,
      eventId: 'evt_1',
      eventType: 'sandbox.running' as const,
      sandboxId: 'sbx_1',
      attempt: n,
      status: 'failed' as const,
      httpStatus: null,
      error: 'connect ECONNREFUSED',
      durationMs: 12,
    });
    clock.set(OLD);
    for (const n of [1, 2, 3]) await store.webhooks.recordDelivery(attempt(n));
    clock.set(NOW - DAY_MS);
    await store.webhooks.recordDelivery(attempt(4));
    clock.set(NOW);
    expect(await purge('webhook_deliveries', 2)).toBe(2);
    expect(await rows('webhook_deliveries')).toBe(2);
    expect(await purge('webhook_deliveries', 2)).toBe(1);
    expect(await rows('webhook_deliveries')).toBe(1);
    expect(await purge('webhook_deliveries', 2)).toBe(0);
  });

  it('removes at most the limit in one batch, counted in the database', async () => {
    for (let n = 1; n <= 25; n += 1) {
      await sandbox(n, OLD, 'failed');
    }
    clock.set(NOW);
    const removed: number[] = [];
    for (let batch = 0; batch < 4; batch += 1) {
      const left = await rows('operations');
      const deleted = await purge('operations', 10);
      expect(left - (await rows('operations'))).toBe(deleted);
      removed.push(deleted);
    }
    expect(removed).toEqual([10, 10, 5, 0]);
  });
});
