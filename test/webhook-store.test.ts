/**
 * The webhook part of the store (src/store/webhooks.ts, migrations 0013 and 0017) on SQLite and
 * PostgreSQL: tenancy of every tenant read, the endpoint limit, rotation's grace period, delivery
 * records, and each event's state per endpoint (src/store/webhook-event-states.ts): a refused or
 * given-up event is kept for a recover, which queues it under a round only one delivery holds.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  MAX_WEBHOOK_ENDPOINTS_PER_TENANT,
  WEBHOOK_GIVEN_UP_AFTER_MS,
  type WebhookDeliveryRecord,
  type WebhookEventRef,
} from '../contract/index.js';
import { openStore, TooManyWebhookEndpointsError, type Store } from '../src/store/index.js';
import { storeBackends, type StoreTarget } from './support/store.js';

/** A clock that moves 1 s per reading; `skip(ms)` moves it further. */
function steppingClock(): (() => Date) & { skip(ms: number): void } {
  let ms = Date.parse('2025-01-01T00:00:00.000Z');
  return Object.assign(() => new Date((ms += 1000)), { skip: (by: number) => void (ms += by) });
}

const ref = (n: number, sandboxId = 'sbx_1'): WebhookEventRef => ({
  id: `evt_${n}`,
  type: 'sandbox.running',
  sandboxId,
});

const endpoint = (n: number, tenant = 'acme') => ({
  id: `whe_${String(n).padStart(26, 'a')}`,
  tenant,
  url: `https://hooks.example.com/${n}`,
  eventTypes: ['sandbox.running' as const, 'sandbox.deleted' as const],
  secret: `whsec_${n}`,
});

const attempt = (endpointId: string, n: number): Omit<WebhookDeliveryRecord, 'createdAt'> => ({
  id: `whd_${n}`,
  endpointId,
  eventId: 'evt_1',
  eventType: 'sandbox.running',
  sandboxId: 'sbx_1',
  attempt: n,
  status: n < 3 ? 'failed' : 'succeeded',
  httpStatus: n < 3 ? null : 204,
  error: n < 3 ? 'connect ECONNREFUSED' : null,
  durationMs: 12.6,
});

describe.each(storeBackends())('webhook store on $name', (backend) => {
  let target: StoreTarget;
  let store: Store;
  let clock: ReturnType<typeof steppingClock>;
  beforeEach(async () => {
    target = await backend.freshTarget();
    clock = steppingClock();
    store = await openStore({ ...target.options, clock });
  });
  afterEach(async () => {
    await store?.close();
    await target?.dispose();
  });

  it("keeps each tenant's endpoints to itself", async () => {
    const mine = await store.webhooks.createEndpoint(endpoint(1));
    await store.webhooks.createEndpoint(endpoint(2, 'other'));
    expect(mine).toMatchObject({ tenant: 'acme', previousSecretExpiresAt: null });
    expect((await store.webhooks.listEndpoints('acme')).map((e) => e.id)).toEqual([mine.id]);
    expect(await store.webhooks.getEndpoint('other', mine.id)).toBeUndefined();
    expect(
      await store.webhooks.rotateSecret('other', mine.id, 'whsec_x', '2030-01-01T00:00:00.000Z'),
    ).toBeUndefined();
    expect(await store.webhooks.deleteEndpoint('other', mine.id)).toBe(false);
    expect(await store.webhooks.endpointsFor('acme', 'sandbox.running')).toEqual([mine.id]);
    expect(await store.webhooks.endpointsFor('acme', 'sandbox.failed')).toEqual([]);
    expect(await store.webhooks.endpointsFor('nobody', 'sandbox.running')).toEqual([]);
  });

  it('refuses an endpoint past the per-tenant limit', async () => {
    for (let n = 0; n < MAX_WEBHOOK_ENDPOINTS_PER_TENANT; n++) {
      await store.webhooks.createEndpoint(endpoint(n));
    }
    await expect(store.webhooks.createEndpoint(endpoint(99))).rejects.toThrow(
      TooManyWebhookEndpointsError,
    );
    await store.webhooks.createEndpoint(endpoint(99, 'other'));
  });

  it('signs with the previous secret too until its grace period ends', async () => {
    const created = await store.webhooks.createEndpoint(endpoint(1));
    const rotated = await store.webhooks.rotateSecret(
      'acme',
      created.id,
      'whsec_new',
      '2025-06-01T00:00:00.000Z',
    );
    expect(rotated?.previousSecretExpiresAt).toBe('2025-06-01T00:00:00.000Z');
    expect(await store.webhooks.target(created.id, '2025-05-31T23:59:59.000Z')).toEqual({
      tenant: 'acme',
      url: 'https://hooks.example.com/1',
      eventTypes: ['sandbox.running', 'sandbox.deleted'],
      secrets: ['whsec_new', 'whsec_1'],
    });
    expect((await store.webhooks.target(created.id, '2025-06-01T00:00:00.000Z'))?.secrets).toEqual([
      'whsec_new',
    ]);
  });

  it('keeps the first body of an event id, and forgets events past the retention', async () => {
    const event = {
      id: 'evt_1',
      tenant: 'acme',
      sandboxId: 'sbx_1',
      type: 'sandbox.running' as const,
      payload: '{"first":true}',
    };
    await store.webhooks.recordEvent(event);
    await store.webhooks.recordEvent({ ...event, payload: '{"first":false}' });
    expect(await store.webhooks.getEvent('evt_1')).toEqual(event);
    expect(await store.webhooks.getEvent('evt_2')).toBeUndefined();
  });

  it('lists delivery attempts newest first, and forgets them with their endpoint', async () => {
    const created = await store.webhooks.createEndpoint(endpoint(1));
    for (const n of [1, 2, 3]) await store.webhooks.recordDelivery(attempt(created.id, n));
    const listed = await store.webhooks.listDeliveries('acme', created.id, 2);
    expect(listed.map((d) => [d.attempt, d.status, d.httpStatus, d.durationMs])).toEqual([
      [3, 'succeeded', 204, 13],
      [2, 'failed', null, 13],
    ]);
    expect(await store.webhooks.listDeliveries('other', created.id, 10)).toEqual([]);
    expect(await store.webhooks.deleteEndpoint('acme', created.id)).toBe(true);
    expect(await store.webhooks.target(created.id, '2025-01-01T00:00:00.000Z')).toBeUndefined();
    expect(await store.webhooks.listDeliveries('acme', created.id, 10)).toEqual([]);
  });
});

describe.each(storeBackends())('webhook event states on $name', (backend) => {
  let target: StoreTarget;
  let store: Store;
  let clock: ReturnType<typeof steppingClock>;
  let endpointId: string;
  beforeEach(async () => {
    target = await backend.freshTarget();
    clock = steppingClock();
    store = await openStore({ ...target.options, clock });
    endpointId = (await store.webhooks.createEndpoint(endpoint(1))).id;
  });
  afterEach(async () => {
    await store?.close();
    await target?.dispose();
  });
  const claim = (event: WebhookEventRef, holder: string) =>
    store.webhooks.claimEvent({ endpointId, event, holder });

  it('lets one delivery take an event, and the same delivery again at its retry', async () => {
    await store.webhooks.trackEvent(ref(1), [endpointId]);
    expect(await store.webhooks.eventState(endpointId, 'evt_1')).toMatchObject({
      status: 'pending',
      round: 0,
    });
    expect(await claim(ref(1), 'a')).toBe(true);
    expect(await claim(ref(1), 'b')).toBe(false);
    expect(await claim(ref(1), 'a')).toBe(true);
    await store.webhooks.settleEvent({ endpointId, event: ref(1), holder: 'a' }, 'succeeded');
    expect((await store.webhooks.eventState(endpointId, 'evt_1'))?.status).toBe('succeeded');
    // Delivered: a repeated signal (a retried emit, another workflow) sends nothing.
    expect(await claim(ref(1), 'a')).toBe(false);
    expect(await claim(ref(1), 'c')).toBe(false);
  });

  it('keeps a refused event, and a recover queues it under a new round that only its delivery holds', async () => {
    await store.webhooks.trackEvent(ref(1), [endpointId]);
    const since = clock().toISOString();
    await store.webhooks.trackEvent(ref(2, 'sbx_2'), [endpointId]);
    await store.webhooks.trackEvent(ref(3), [endpointId]);
    for (const n of [1, 2, 3]) {
      expect(await claim(ref(n), `first-${n}`)).toBe(true);
    }
    for (const n of [1, 2]) {
      await store.webhooks.settleEvent(
        { endpointId, event: ref(n), holder: `first-${n}` },
        'refused',
      );
    }
    await store.webhooks.settleEvent({ endpointId, event: ref(3), holder: 'first-3' }, 'succeeded');

    // Another tenant cannot recover this endpoint's events.
    expect(await store.webhooks.requeueEvents('other', endpointId, since)).toEqual([]);
    // evt_1 was emitted before `since`; evt_3 was delivered.
    const queued = await store.webhooks.requeueEvents('acme', endpointId, since);
    expect(queued).toEqual([
      {
        eventId: 'evt_2',
        sandboxId: 'sbx_2',
        type: 'sandbox.running',
        round: 1,
        emittedAt: expect.any(String),
      },
    ]);
    expect(await store.webhooks.eventState(endpointId, 'evt_2')).toMatchObject({
      status: 'queued',
      round: 1,
    });
    // The first delivery's round is over: it may not send again, nor may a round-0 signal.
    expect(await claim(ref(2, 'sbx_2'), 'first-2')).toBe(false);
    // A second recover before any delivery took it queues it again; the first round is void.
    const again = await store.webhooks.requeueEvents('acme', endpointId, since);
    expect(again.map((e) => [e.eventId, e.round])).toEqual([['evt_2', 2]]);
    expect(await claim({ ...ref(2, 'sbx_2'), round: 1 }, 'recover-1')).toBe(false);
    expect(await claim({ ...ref(2, 'sbx_2'), round: 2 }, 'recover-2')).toBe(true);
    // Taken: a third recover leaves it to that delivery.
    expect(await store.webhooks.requeueEvents('acme', endpointId, since)).toEqual([]);
    await store.webhooks.settleEvent(
      { endpointId, event: { ...ref(2, 'sbx_2'), round: 2 }, holder: 'recover-2' },
      'succeeded',
    );
    expect(await store.webhooks.eventState(endpointId, 'evt_2')).toMatchObject({
      status: 'succeeded',
      round: 2,
    });
    // A whole-window recover takes evt_1 too, once.
    const all = await store.webhooks.requeueEvents('acme', endpointId, '2024-12-31T00:00:00.000Z');
    expect(all.map((e) => e.eventId)).toEqual(['evt_1']);
  });

  it('counts an event still delivering past its delivery window as given up, and recovers it', async () => {
    await store.webhooks.trackEvent(ref(1), [endpointId]);
    expect(await claim(ref(1), 'a')).toBe(true);
    const since = '2024-12-31T00:00:00.000Z';
    // Still within the window: its delivery retries it; a recover leaves it alone.
    clock.skip(WEBHOOK_GIVEN_UP_AFTER_MS - 60_000);
    expect(await claim(ref(1), 'a')).toBe(true);
    expect(await store.webhooks.requeueEvents('acme', endpointId, since)).toEqual([]);
    clock.skip(120_000);
    const queued = await store.webhooks.requeueEvents('acme', endpointId, since);
    expect(queued.map((e) => [e.eventId, e.round])).toEqual([['evt_1', 1]]);
    expect(await claim(ref(1), 'a')).toBe(false);
  });

  it('two recovers at once leave each event to exactly one delivery', async () => {
    for (let n = 1; n <= 20; n++) {
      await store.webhooks.trackEvent(ref(n, `sbx_${n % 3}`), [endpointId]);
      expect(await claim(ref(n, `sbx_${n % 3}`), `first-${n}`)).toBe(true);
      await store.webhooks.settleEvent(
        { endpointId, event: ref(n, `sbx_${n % 3}`), holder: `first-${n}` },
        'refused',
      );
    }
    const since = '2024-12-31T00:00:00.000Z';
    const [one, two] = await Promise.all([
      store.webhooks.requeueEvents('acme', endpointId, since),
      store.webhooks.requeueEvents('acme', endpointId, since),
    ]);
    // Every event is queued by one recover or both; every delivery each started tries it.
    const started = [...one!, ...two!].map((e, index) => ({ e, holder: `recover-${index}` }));
    expect(new Set(started.map(({ e }) => e.eventId)).size).toBe(20);
    const taken = await Promise.all(
      started.map(({ e, holder }) =>
        claim({ id: e.eventId, type: e.type, sandboxId: e.sandboxId, round: e.round }, holder),
      ),
    );
    const winners = started.filter((_, index) => taken[index]).map(({ e }) => e.eventId);
    expect(winners.sort()).toEqual(
      Array.from({ length: 20 }, (_, index) => `evt_${index + 1}`).sort(),
    );
  });

  it('gives an event emitted before its state was kept a state at its first delivery', async () => {
    expect(await store.webhooks.eventState(endpointId, 'evt_9')).toBeUndefined();
    expect(await claim(ref(9), 'a')).toBe(true);
    expect(await store.webhooks.eventState(endpointId, 'evt_9')).toMatchObject({
      status: 'delivering',
      round: 0,
    });
  });

  it('forgets the states with their endpoint, and a given-up state past the retention', async () => {
    await store.webhooks.trackEvent(ref(1), [endpointId]);
    expect(await store.webhooks.deleteEndpoint('acme', endpointId)).toBe(true);
    expect(await store.webhooks.eventState(endpointId, 'evt_1')).toBeUndefined();
    const kept = (await store.webhooks.createEndpoint(endpoint(2))).id;
    await store.webhooks.trackEvent(ref(2), [kept]);
    clock.skip(8 * 86_400_000);
    // The retention Schedule's purge (src/store/retention.ts), not a write, forgets it.
    const before = new Date(clock().getTime() - 7 * 86_400_000).toISOString();
    expect(await store.retention.purgeBatch('webhook_deliveries', before, 100)).toBe(1);
    expect(await store.webhooks.eventState(kept, 'evt_2')).toBeUndefined();
  });
});
