/**
 * Idempotency keys (docs/api.md, `Idempotency-Key`): a tenant's key is claimed by the
 * first create that uses it; later requests with the key learn which create that was.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/** A claimed key and the create it belongs to. */
export interface IdempotencyEntry {
  requestHash: string;
  operationId: string;
  sandboxId: string;
}

/**
 * Claims (tenant, key) for a create. `INSERT … ON CONFLICT DO NOTHING`, so two concurrent
 * claims cannot both win: on PostgreSQL the second waits for the first's transaction and then
 * inserts nothing.
 * @param createdAt ISO-8601
 * @returns true when this call claimed the key, false when it was already taken
 */
export async function claimIdempotencyKey(
  db: Kysely<Database>,
  entry: IdempotencyEntry & { tenant: string; key: string; createdAt: string },
): Promise<boolean> {
  const result = await db
    .insertInto('idempotency_keys')
    .values({
      tenant: entry.tenant,
      key: entry.key,
      request_hash: entry.requestHash,
      operation_id: entry.operationId,
      sandbox_id: entry.sandboxId,
      created_at: entry.createdAt,
    })
    .onConflict((conflict) => conflict.columns(['tenant', 'key']).doNothing())
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** The create that claimed (tenant, key); undefined when the key is unused. */
export async function findIdempotencyKey(
  db: Kysely<Database>,
  tenant: string,
  key: string,
): Promise<IdempotencyEntry | undefined> {
  const row = await db
    .selectFrom('idempotency_keys')
    .select(['request_hash', 'operation_id', 'sandbox_id'])
    .where('tenant', '=', tenant)
    .where('key', '=', key)
    .executeTakeFirst();
  return (
    row && {
      requestHash: row.request_hash,
      operationId: row.operation_id,
      sandboxId: row.sandbox_id,
    }
  );
}
