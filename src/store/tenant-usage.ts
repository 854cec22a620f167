/**
 * A tenant's share (docs/api.md, "Tenant limits"): its sandboxes in an active state and the
 * resources they requested, counted from the sandbox rows, so a sandbox that ends (failed,
 * deleted, lost) frees its share in the same commit that ends it.
 *
 * Exact across API replicas: a create takes the tenant's admission lock, counts, and inserts its
 * row in one transaction (src/store/sandbox-create.ts `createSandbox`). PostgreSQL: a transaction-scoped
 * advisory lock on the tenant, so two replicas' creates of one tenant take turns and each counts
 * the rows the other committed (READ COMMITTED reads the latest commit at each statement);
 * other tenants are not held up. SQLite: `BEGIN IMMEDIATE` already makes every write
 * transaction take turns (src/store/sqlite-dialect.ts).
 */
import { sql, type Kysely } from 'kysely';
import type { DialectName } from './database.js';
import type { Database } from './schema.js';
import {
  ACTIVE_SANDBOX_STATES,
  MILLICORES_PER_CORE,
  coresOf,
  type TenantUsage,
} from '../../contract/index.js';

/** Namespace of the tenants' advisory lock keys (hashed with the tenant id). */
const ADMISSION_LOCK_PREFIX = 'durable-sandbox/tenant-admission/';

/**
 * Takes the tenant's admission lock until the transaction ends (PostgreSQL; a no-op on SQLite,
 * whose write transactions hold the database lock from their start).
 * @param trx a transaction; outside one the lock would be released at once
 */
export async function lockTenantAdmission(
  trx: Kysely<Database>,
  dialect: DialectName,
  tenant: string,
): Promise<void> {
  if (dialect !== 'postgres') return;
  const key = `${ADMISSION_LOCK_PREFIX}${tenant}`;
  await sql`select pg_advisory_xact_lock(hashtextextended(${key}, 0))`.execute(trx);
}

/** What the tenant's active sandboxes hold (zero when it has none). */
export async function selectTenantUsage(
  db: Kysely<Database>,
  tenant: string,
): Promise<TenantUsage> {
  const row = await db
    .selectFrom('sandboxes')
    .select((eb) => [
      eb.fn.countAll<string | number>().as('sandboxes'),
      // Rows written before 0008 have no millicores: their whole cores count.
      eb.fn
        .sum<string | number | null>(
          eb.fn.coalesce('cpu_millicores', sql<number>`cpu * ${MILLICORES_PER_CORE}`),
        )
        .as('millicores'),
      eb.fn.sum<string | number | null>('memory_mib').as('memory_mib'),
      eb.fn.sum<string | number | null>('disk_mib').as('disk_mib'),
    ])
    .where('tenant', '=', tenant)
    .where('state', 'in', [...ACTIVE_SANDBOX_STATES])
    .executeTakeFirstOrThrow();
  // PostgreSQL answers bigint and numeric as strings.
  return {
    sandboxes: Number(row.sandboxes),
    cpu: coresOf(Number(row.millicores ?? 0)),
    memoryMib: Number(row.memory_mib ?? 0),
    diskMib: Number(row.disk_mib ?? 0),
  };
}
