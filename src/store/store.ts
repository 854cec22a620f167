/**
 * {@link openStore}: connects, migrates, and returns the {@link Store}. Each method is one
 * short transaction composed of the row queries in sandboxes.ts, executions.ts and
 * idempotency.ts; fenced writes lock the sandbox first (fencing.ts). The methods live by
 * concern, over one shared context (store-context.ts): the create (sandbox-create.ts), a
 * sandbox's writes (sandbox-writes.ts) and outcomes (sandbox-outcomes.ts), operation rows
 * (operation-writes.ts), lost sandboxes (lost-sandboxes.ts), and single queries (store-reads.ts).
 */
import { sql, type Kysely } from 'kysely';
import { openDatabase } from './database.js';
import { migrateToLatest } from './migrations/index.js';
import { createOperationNotifier } from './operation-notifier.js';
import { feedChangeKey, selectFeedEvents } from './event-feed.js';
import { resealWebhookSecrets, webhookStore } from './webhooks.js';
import { warmPoolStore } from './warm-pools.js';
import { retentionStore } from './retention.js';
import { storeContext } from './store-context.js';
import { sandboxCreate } from './sandbox-create.js';
import { sandboxWrites } from './sandbox-writes.js';
import { sandboxEndWrites, sandboxOutcomeWrites } from './sandbox-outcomes.js';
import { operationOutcomeWrite, operationWrites } from './operation-writes.js';
import { lostSandboxWrites } from './lost-sandboxes.js';
import { rootfsFloorQueries, storeReads, storeWaits } from './store-reads.js';
import type { Store, StoreOptions } from './types.js';

export { DELETED_REASON } from './sandbox-outcomes.js';

/**
 * Opens the store and applies pending migrations (a no-op when the schema is current).
 * SQLite runs in WAL mode with a busy timeout; its file's directory is created if missing.
 * @throws StoreOptionsError when the options name no usable database
 * @throws MigrationError when a migration fails (the connection is closed first)
 * @throws the driver's error when PostgreSQL is unreachable
 */
export async function openStore(options: StoreOptions): Promise<Store> {
  const { db, dialect, sqliteDataVersion } = openDatabase(options);
  try {
    await migrateToLatest(db as Kysely<unknown>, dialect);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  if (options.webhookSecretKeys) {
    try {
      await resealWebhookSecrets(db, options.webhookSecretKeys);
    } catch (error) {
      await db.destroy();
      throw error;
    }
  }
  const clock = options.clock ?? (() => new Date());
  const notifier = createOperationNotifier(
    dialect === 'postgres'
      ? {
          databaseUrl: options.databaseUrl,
          send: async (channel, payload) => {
            await sql`select pg_notify(${channel}, ${payload})`.execute(db);
          },
        }
      : { sqliteDataVersion },
  );
  const ctx = storeContext(db, dialect, clock, notifier);
  return {
    webhooks: webhookStore(db, ctx.now, options.webhookSecretKeys, {
      dialect,
      onEvent: (tenant) => notifier.notify(feedChangeKey(tenant)),
    }),
    events: {
      list: (tenant, query) => selectFeedEvents(db, tenant, query),
      waitForEvent: (tenant, timeoutMs, signal) =>
        notifier.waitForChange(feedChangeKey(tenant), timeoutMs, signal),
    },
    warmPools: warmPoolStore(db, ctx.now),
    retention: retentionStore(db, clock),
    ...sandboxCreate(ctx),
    ...sandboxWrites(ctx),
    ...sandboxOutcomeWrites(ctx),
    ...sandboxEndWrites(ctx),
    ...operationWrites(ctx),
    ...operationOutcomeWrite(ctx),
    ...lostSandboxWrites(ctx),
    ...storeReads(ctx),
    ...storeWaits(ctx),
    ...rootfsFloorQueries(ctx),

    async ping() {
      await sql`select 1`.execute(db);
    },

    async close() {
      await notifier.close();
      await db.destroy();
    },
  };
}
