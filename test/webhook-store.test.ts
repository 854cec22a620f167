/**
 * The webhook part of the store (store/webhooks.ts, migration 0013) on SQLite and PostgreSQL:
 * tenancy of every tenant read, the endpoint limit, rotation's grace period, delivery records.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MAX_WEBHOOK_ENDPOINTS_PER_TENANT, type WebhookDeliveryRecord } from '../contract/index.js';
import { openStore, TooManyWebhookEndpointsError, type Store } from '../store/index.js';
import { storeBackends, type StoreTarget } from './support/store.js';

function steppingClock(): () => Date {
  let ms = Date.parse('2025-01-01T00:00:00.000Z');
  return () => new Date((ms += 1000));
}

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
  beforeEach(async () => {
    target = await backend.freshTarget();
    store = await openStore({ ...target.options, clock: steppingClock() });
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
