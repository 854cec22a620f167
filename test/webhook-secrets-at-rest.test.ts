/**
 * Webhook signing secrets encrypted at rest in the store (WEBHOOK_SECRET_KEYS), on SQLite and
 * PostgreSQL: the row holds no secret, a delivery reads it back, a new key re-seals every row at
 * the next open, and a store whose ring lacks a row's key refuses to open, naming the variable.
 */
import { randomBytes } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/database.js';
import { openStore, type Store } from '../src/store/index.js';
import { parseSecretKeyRing } from '../src/webhooks/secret-box.js';
import { storeBackends, type StoreTarget } from './support/store.js';

const key = () => randomBytes(32).toString('base64');
const endpoint = {
  id: `whe_${'a'.repeat(26)}`,
  tenant: 'acme',
  url: 'https://hooks.example.com/1',
  eventTypes: ['sandbox.running' as const],
  secret: 'whsec_c2VjcmV0LXRoYXQtbXVzdC1ub3QtbGVhaw==',
};

describe.each(storeBackends())('webhook secrets at rest on $name', (backend) => {
  let target: StoreTarget;
  const stores: Store[] = [];
  const open = async (keys?: string) => {
    const store = await openStore({
      ...target.options,
      webhookSecretKeys: parseSecretKeyRing(keys),
    });
    stores.push(store);
    return store;
  };
  const rawRow = async () => {
    const { db } = openDatabase(target.options);
    try {
      return await db
        .selectFrom('webhook_endpoints')
        .select(['secret', 'previous_secret'])
        .executeTakeFirstOrThrow();
    } finally {
      await db.destroy();
    }
  };
  beforeEach(async () => {
    target = await backend.freshTarget();
  });
  afterEach(async () => {
    for (const store of stores.splice(0)) await store.close();
    await target?.dispose();
  });

  it('stores the secret sealed, and a delivery reads it back', async () => {
    const store = await open(`k1:${key()}`);
    await store.webhooks.createEndpoint(endpoint);
    const row = await rawRow();
    expect(row.secret).toMatch(/^whenc:v1:k1:/);
    expect(JSON.stringify(row)).not.toContain(endpoint.secret);
    const target = await store.webhooks.target(endpoint.id, new Date().toISOString());
    expect(target?.secrets).toEqual([endpoint.secret]);
    // A rotation seals the new secret; the previous one signs beside it during its grace.
    await store.webhooks.rotateSecret(
      'acme',
      endpoint.id,
      'whsec_next',
      '2999-01-01T00:00:00.000Z',
    );
    const rotated = await rawRow();
    expect(rotated.secret).toMatch(/^whenc:v1:k1:/);
    expect(JSON.stringify(rotated)).not.toContain('whsec_');
    expect((await store.webhooks.target(endpoint.id, new Date().toISOString()))?.secrets).toEqual([
      'whsec_next',
      endpoint.secret,
    ]);
  });

  it('re-seals every row under a new first key at the next open; the old key can then go', async () => {
    const oldKey = key();
    const newKey = key();
    // Written in clear (before any key), then sealed under `old`, then under `new`.
    await (await open()).webhooks.createEndpoint(endpoint);
    expect((await rawRow()).secret).toBe(endpoint.secret);
    await open(`old:${oldKey}`);
    expect((await rawRow()).secret).toMatch(/^whenc:v1:old:/);
    await open(`new:${newKey},old:${oldKey}`);
    expect((await rawRow()).secret).toMatch(/^whenc:v1:new:/);
    const store = await open(`new:${newKey}`);
    expect((await store.webhooks.target(endpoint.id, new Date().toISOString()))?.secrets).toEqual([
      endpoint.secret,
    ]);
  });

  it('re-seals a row whose key id differs from the first key only where LIKE would match any character', async () => {
    const kx1 = key();
    const k_1 = key();
    await (await open(`kx1:${kx1}`)).webhooks.createEndpoint(endpoint);
    await open(`k_1:${k_1},kx1:${kx1}`);
    expect((await rawRow()).secret).toMatch(/^whenc:v1:k_1:/);
    // Re-sealed, the row opens with `k_1` alone.
    const store = await open(`k_1:${k_1}`);
    expect((await store.webhooks.target(endpoint.id, new Date().toISOString()))?.secrets).toEqual([
      endpoint.secret,
    ]);
  });

  it('refuses to open when a row is sealed under a key the ring lacks, naming WEBHOOK_SECRET_KEYS', async () => {
    await (await open(`k1:${key()}`)).webhooks.createEndpoint(endpoint);
    await expect(open(`k2:${key()}`)).rejects.toThrow(/WEBHOOK_SECRET_KEYS/);
  });
});
