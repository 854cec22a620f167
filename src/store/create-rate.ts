/**
 * A tenant's create-rate bucket in the store (contract/create-rate.ts, migration 0019): read,
 * refilled and taken from inside the create's own transaction, under the tenant's admission lock
 * (src/store/tenant-usage.ts: a PostgreSQL advisory lock; SQLite's write lock), so every API replica
 * and the worker's Nexus handler take from one bucket, turn by turn. A refused create writes
 * nothing, and a create refused later in the same transaction (a held limit) rolls its token
 * back with the rest.
 */
import type { Kysely } from 'kysely';
import { takeCreateToken, type CreateRate, type CreateRateTake } from '../../contract/index.js';
import type { Database } from './schema.js';

/**
 * Takes one token from the tenant's bucket at `nowMs` (epoch ms) and stores what is left.
 * @param trx the create's transaction, holding the tenant's admission lock
 * @returns the decision; when refused, nothing was written
 */
export async function takeCreateTokenIn(
  trx: Kysely<Database>,
  tenant: string,
  rate: CreateRate,
  nowMs: number,
): Promise<CreateRateTake> {
  const row = await trx
    .selectFrom('tenant_rate_buckets')
    .select(['millitokens', 'updated_at_ms'])
    .where('tenant', '=', tenant)
    .executeTakeFirst();
  const take = takeCreateToken(
    row && { millitokens: Number(row.millitokens), updatedAtMs: Number(row.updated_at_ms) },
    rate,
    nowMs,
  );
  if (!take.admitted) return take;
  const values = { millitokens: take.bucket.millitokens, updated_at_ms: take.bucket.updatedAtMs };
  if (row) {
    await trx.updateTable('tenant_rate_buckets').set(values).where('tenant', '=', tenant).execute();
  } else {
    await trx
      .insertInto('tenant_rate_buckets')
      .values({ tenant, ...values })
      .execute();
  }
  return take;
}
