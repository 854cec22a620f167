/**
 * The event feed's part of the store (src/store/event-feed.ts, migration 0021) on SQLite and
 * PostgreSQL: every kept event gets the next number in write order, a tenant reads only its own
 * after a number, filtered by type and sandbox; a sandbox marked lost keeps its `sandbox.lost`
 * event in the same transaction; a feed waiter is woken by the write, not by a clock.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { WebhookEventType } from '../contract/index.js';
import { openStore, type NewSandboxInput, type Store } from '../src/store/index.js';
import { storeBackends, type StoreTarget } from './support/store.js';

function steppingClock(): () => Date {
  let ms = Date.parse('2025-01-01T00:00:00.000Z');
  return () => new Date((ms += 1000));
}

const event = (n: number, tenant = 'acme', type: WebhookEventType = 'sandbox.running') => ({
  id: `evt_${n}`,
  tenant,
  sandboxId: `sbx_${n % 2}`,
  type,
  payload: JSON.stringify({ type, timestamp: '2025-01-01T00:00:00.000Z', data: { n } }),
});

function sandboxInput(n: number, tenant = 'acme'): NewSandboxInput {
  return {
    id: `sbx_${String(n).padStart(4, '0')}`,
    tenant,
    template: 'base',
    resources: { cpu: 1, memoryMib: 1024, diskMib: 2048 },
    operationId: `op_${String(n).padStart(4, '0')}`,
  };
}

describe.each(storeBackends())('event feed store on $name', (backend) => {
  let target: StoreTarget;
  let store: Store;
  beforeEach(async () => {
    target = await backend.freshTarget();
    store = await openStore({ ...target.options, clock: steppingClock() });
  });
  afterEach(async () => {
    await store?.close();
    await target?.dispose();
  });

  /** A running sandbox on pod `uid-n`. */
  async function running(n: number, tenant = 'acme') {
    const input = sandboxInput(n, tenant);
    expect((await store.createSandbox(input)).kind).toBe('created');
    const execution = { sandboxId: input.id, generation: 1, attempt: 1 };
    await store.recordPod({ ...execution, podName: `sbx-${n}`, podUid: `uid-${n}` });
    await store.markSandboxRunning({ ...execution, podIp: '10.0.0.1' });
    return input.id;
  }

  it('numbers events in write order and gives a tenant only its own, after a number', async () => {
    await store.webhooks.recordEvent(event(1));
    await store.webhooks.recordEvent(event(2, 'other'));
    await store.webhooks.recordEvent(event(3));
    await store.webhooks.recordEvent(event(4, 'acme', 'sandbox.deleted'));
    // A repeated id changes nothing: neither its body nor its number.
    await store.webhooks.recordEvent({ ...event(1), payload: '{"changed":true}' });

    const all = await store.events.list('acme', { afterSeq: 0, limit: 10 });
    expect(all.map((e) => [e.id, e.seq])).toEqual([
      ['evt_1', 1],
      ['evt_3', 3],
      ['evt_4', 4],
    ]);
    expect(all[0]?.payload).toBe(event(1).payload);
    expect((await store.events.list('other', { afterSeq: 0, limit: 10 })).map((e) => e.id)).toEqual(
      ['evt_2'],
    );
    expect((await store.events.list('acme', { afterSeq: 1, limit: 1 })).map((e) => e.id)).toEqual([
      'evt_3',
    ]);
    const deleted = await store.events.list('acme', {
      afterSeq: 0,
      types: ['sandbox.deleted'],
      limit: 10,
    });
    expect(deleted.map((e) => e.id)).toEqual(['evt_4']);
    const ofSandbox = await store.events.list('acme', {
      afterSeq: 0,
      sandboxId: 'sbx_1',
      limit: 10,
    });
    expect(ofSandbox.map((e) => e.id)).toEqual(['evt_1', 'evt_3']);
  });

  it('gives concurrent writers from two store instances distinct numbers, none skipped', async () => {
    const second = await openStore({ ...target.options, clock: steppingClock() });
    try {
      await Promise.all(
        Array.from({ length: 20 }, (_, n) =>
          (n % 2 === 0 ? store : second).webhooks.recordEvent(event(n + 1)),
        ),
      );
    } finally {
      await second.close();
    }
    const numbers = (await store.events.list('acme', { afterSeq: 0, limit: 100 })).map(
      (e) => e.seq,
    );
    expect(numbers).toEqual(Array.from({ length: 20 }, (_, n) => n + 1));
  });

  it('keeps the sandbox.lost event of a sandbox marked lost, in the same transaction', async () => {
    const one = await running(1);
    const two = await running(2, 'other');
    expect(await store.markSandboxLost({ sandboxId: one, podUid: 'uid-1', reason: 'gone' })).toBe(
      true,
    );
    // Marking it again writes nothing, and no second event.
    expect(await store.markSandboxLost({ sandboxId: one, podUid: 'uid-1', reason: 'gone' })).toBe(
      false,
    );
    expect(await store.markRunningSandboxesLost({ reason: 'the cluster was rebuilt' })).toEqual([
      two,
    ]);
    const mine = await store.events.list('acme', { afterSeq: 0, limit: 10 });
    expect(mine.map((e) => e.type)).toEqual(['sandbox.lost']);
    const body = JSON.parse(mine[0]!.payload) as { type: string; data: Record<string, unknown> };
    expect(body).toMatchObject({
      type: 'sandbox.lost',
      data: { id: one, state: 'lost', failure: { code: 'pod_lost', message: 'gone' } },
    });
    const theirs = await store.events.list('other', { afterSeq: 0, limit: 10 });
    expect(theirs.map((e) => [e.type, e.sandboxId])).toEqual([['sandbox.lost', two]]);
  });

  it("wakes a tenant's feed waiter when its event is written, and not for another tenant's", async () => {
    const woken = store.events.waitForEvent('acme', 30_000);
    const notMine = store.events.waitForEvent('other', 300);
    await store.webhooks.recordEvent(event(1));
    expect(await woken).toBe(true);
    expect(await notMine).toBe(false);
    // A lost sandbox's event wakes too.
    const id = await running(3);
    const lost = store.events.waitForEvent('acme', 30_000);
    await store.markSandboxLost({ sandboxId: id, podUid: 'uid-3', reason: 'gone' });
    expect(await lost).toBe(true);
  });
});
