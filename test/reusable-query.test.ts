/**
 * The operation read compiled once per database (store/reusable-query.ts): each call still reads
 * its own row, on SQLite and on PostgreSQL (TEST_DATABASE_URL), and the query is built once.
 */
import type { Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/database.js';
import { openStore, type Store } from '../src/store/index.js';
import { reusableQuery } from '../src/store/reusable-query.js';
import type { Database } from '../src/store/schema.js';
import { storeBackends, type StoreTarget } from './support/store.js';

const RESOURCES = { cpu: 1, memoryMib: 256, diskMib: 2048 };

describe.each(storeBackends())('a reusable query on $name', (backend) => {
  let target: StoreTarget;
  let store: Store;
  let db: Kysely<Database>;

  beforeEach(async () => {
    target = await backend.freshTarget();
    store = await openStore(target.options);
    ({ db } = openDatabase(target.options));
    for (const [n, tenant] of [
      [1, 'acme'],
      [2, 'acme'],
      [3, 'other'],
    ] as const) {
      const result = await store.createSandbox({
        id: `sbx_000${n}`,
        tenant,
        template: 'base',
        resources: RESOURCES,
        operationId: `op_000${n}`,
      });
      if (result.kind !== 'created') throw new Error(`expected created, got ${result.kind}`);
    }
  });
  afterEach(async () => {
    await db?.destroy();
    await store?.close();
    await target?.dispose();
  });

  it("reads each operation by the call's own id and tenant, one call after another", async () => {
    expect((await store.getOperation('acme', 'op_0001'))?.sandbox?.id).toBe('sbx_0001');
    expect((await store.getOperation('acme', 'op_0002'))?.sandbox?.id).toBe('sbx_0002');
    // Another tenant's operation is not found, and neither is one that does not exist.
    expect(await store.getOperation('acme', 'op_0003')).toBeUndefined();
    expect(await store.getOperation('other', 'op_0003')).toMatchObject({ id: 'op_0003' });
    expect(await store.getOperation('acme', 'op_9999')).toBeUndefined();
  });

  it('builds the query once per database, however many calls with other values', async () => {
    let builds = 0;
    const read = reusableQuery((on: Kysely<Database>, id: string, tenant: string) => {
      builds++;
      return on
        .selectFrom('sandboxes')
        .select(['id', 'tenant'])
        .where('id', '=', id)
        .where('tenant', '=', tenant);
    });
    expect(await read(db, 'sbx_0001', 'acme')).toEqual([{ id: 'sbx_0001', tenant: 'acme' }]);
    expect(await read(db, 'sbx_0003', 'other')).toEqual([{ id: 'sbx_0003', tenant: 'other' }]);
    expect(await read(db, 'sbx_0003', 'acme')).toEqual([]);
    expect(builds).toBe(1);
  });

  it('refuses a query that uses a value other than as exactly one parameter', async () => {
    const twice = reusableQuery((on: Kysely<Database>, id: string) =>
      on.selectFrom('sandboxes').select('id').where('id', '=', id).where('operation_id', '=', id),
    );
    await expect(twice(db, 'sbx_0001')).rejects.toThrow(
      'reusableQuery: value 0 must be used exactly once, as a parameter (used 2 times)',
    );
  });
});
