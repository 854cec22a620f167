/**
 * The store's migrations, listed in code (not discovered on the file system) so they bundle
 * with the service. Names sort in the order they apply; never rename or edit one that shipped,
 * add a new one instead.
 */
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import type { DialectName } from '../database.js';
import { initialSchema } from './0001-initial.js';
import { sandboxStateLost } from './0002-sandbox-state-lost.js';
import { operationsTable } from './0003-operations.js';
import { rootfsFloors } from './0004-rootfs-floors.js';
import { readinessWaits } from './0005-readiness-waits.js';
import { operationPlacements } from './0006-operation-placements.js';
import { operationTraceId } from './0007-operation-trace-id.js';
import { sandboxCpuMillicores } from './0008-sandbox-cpu-millicores.js';
import { sandboxesStateUpdatedAt } from './0009-sandboxes-state-updated-at.js';
import { operationResult } from './0010-operation-result.js';
import { sandboxesTenantState } from './0011-sandboxes-tenant-state.js';
import { webhooks } from './0013-webhooks.js';
import { sandboxLifetimes } from './0014-sandbox-lifetimes.js';
import { warmPools } from './0015-warm-pools.js';
import { dropReadinessWaits } from './0016-drop-readiness-waits.js';
import { webhookEndpointEvents } from './0017-webhook-endpoint-events.js';
import { sandboxLabels } from './0018-sandbox-labels.js';
import { tenantRateBuckets } from './0019-tenant-rate-buckets.js';
import { rootfsFloorHealing } from './0020-rootfs-floor-healing.js';
import { eventFeed } from './0021-event-feed.js';
import { operationAip151 } from './0022-operation-aip151.js';
import { retentionIndexes } from './0023-retention-indexes.js';

/** Every migration by name. */
export const MIGRATIONS: Readonly<Record<string, Migration>> = {
  '0001-initial': initialSchema,
  '0002-sandbox-state-lost': sandboxStateLost,
  '0003-operations': operationsTable,
  '0004-rootfs-floors': rootfsFloors,
  '0005-readiness-waits': readinessWaits,
  '0006-operation-placements': operationPlacements,
  '0007-operation-trace-id': operationTraceId,
  '0008-sandbox-cpu-millicores': sandboxCpuMillicores,
  '0009-sandboxes-state-updated-at': sandboxesStateUpdatedAt,
  '0010-operation-result': operationResult,
  '0011-sandboxes-tenant-state': sandboxesTenantState,
  '0013-webhooks': webhooks,
  '0014-sandbox-lifetimes': sandboxLifetimes,
  '0015-warm-pools': warmPools,
  '0016-drop-readiness-waits': dropReadinessWaits,
  '0017-webhook-endpoint-events': webhookEndpointEvents,
  '0018-sandbox-labels': sandboxLabels,
  '0019-tenant-rate-buckets': tenantRateBuckets,
  '0020-rootfs-floor-healing': rootfsFloorHealing,
  '0021-event-feed': eventFeed,
  '0022-operation-aip151': operationAip151,
  '0023-retention-indexes': retentionIndexes,
};

const provider: MigrationProvider = {
  async getMigrations() {
    return { ...MIGRATIONS };
  },
};

/** Thrown by {@link migrateToLatest}; the message names the migration that failed. */
export class MigrationError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'MigrationError';
  }
}

/**
 * Key of the PostgreSQL session advisory lock held while migrating. kysely's own migration lock
 * lives in a table it creates first, and two processes creating it at once can fail; this lock
 * makes the whole run, table creation included, one process at a time.
 */
export const POSTGRES_MIGRATION_LOCK_KEY = 7_318_224_601;

/**
 * Applies every pending migration, each in a transaction, one process at a time (PostgreSQL: a
 * session advisory lock; SQLite: the migration transaction's write lock, see sqlite-dialect.ts).
 * A database already at the latest migration is left alone.
 * @throws MigrationError naming the failed migration, with the driver's error as `cause`
 */
export async function migrateToLatest(db: Kysely<unknown>, dialect: DialectName): Promise<void> {
  if (dialect !== 'postgres') return runMigrator(db);
  await db.connection().execute(async (connection) => {
    const key = sql.lit(POSTGRES_MIGRATION_LOCK_KEY);
    await sql`select pg_advisory_lock(${key})`.execute(connection);
    try {
      // kysely looks for its bookkeeping tables in every schema unless told which one; name ours
      // so another schema's kysely_migration (another app, another test) is not mistaken for it.
      const { rows } = await sql<{ schema: string }>`select current_schema() as schema`.execute(
        connection,
      );
      await runMigrator(connection, rows[0]?.schema);
    } finally {
      await sql`select pg_advisory_unlock(${key})`.execute(connection);
    }
  });
}

async function runMigrator(db: Kysely<unknown>, migrationTableSchema?: string): Promise<void> {
  const migrator = new Migrator({ db, provider, migrationTableSchema });
  const { error, results } = await migrator.migrateToLatest();
  if (error === undefined) return;
  const failed = results?.find((result) => result.status === 'Error');
  const name = failed?.migrationName ?? '(before any migration ran)';
  const reason = error instanceof Error ? error.message : String(error);
  throw new MigrationError(`migration ${name} failed: ${reason}`, { cause: error });
}
