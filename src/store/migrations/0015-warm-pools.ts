/**
 * `warm_pools` (docs/architecture.md, "Warm pools"): per template with a pool, the size the
 * operator's scale route set (null: the template's own), how many pods creates claimed from it,
 * and what its last reconcile saw (JSON of contract/warm-pool.ts `WarmPoolStatus`); and
 * `warm_pods`, every pool pod this installation made (uid, and the fingerprint of what it was
 * made from), so only those are counted, claimed or deleted. An expand
 * step only (a new table), so the release before runs on it unchanged. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const warmPools: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('warm_pools')
      .addColumn('template', 'text', (col) => col.primaryKey())
      .addColumn('size', 'integer')
      .addColumn('claimed', 'bigint', (col) => col.notNull().defaultTo(0))
      .addColumn('status', 'text')
      .addColumn('observed_at', 'text')
      .addColumn('updated_at', 'text', (col) => col.notNull())
      .execute();
    await db.schema
      .createTable('warm_pods')
      .addColumn('uid', 'text', (col) => col.primaryKey())
      .addColumn('template', 'text', (col) => col.notNull())
      .addColumn('name', 'text', (col) => col.notNull())
      .addColumn('fingerprint', 'text', (col) => col.notNull())
      .addColumn('created_at', 'text', (col) => col.notNull())
      .execute();
    await db.schema.createIndex('warm_pods_template').on('warm_pods').column('template').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('warm_pods').execute();
    await db.schema.dropTable('warm_pools').execute();
  },
};
