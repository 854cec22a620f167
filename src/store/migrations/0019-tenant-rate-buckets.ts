/**
 * `tenant_rate_buckets` (docs/api.md, "Tenant limits"): each tenant's create-rate token bucket
 * (contract/create-rate.ts), its tokens in thousandths at `updated_at_ms` (epoch ms), kept in the
 * store so every API replica and the worker's Nexus handler take from one bucket. A row appears
 * with a tenant's first admitted create. An expand step only (a new table), so the release
 * before runs on it unchanged. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const tenantRateBuckets: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('tenant_rate_buckets')
      .addColumn('tenant', 'text', (col) => col.primaryKey())
      .addColumn('millitokens', 'bigint', (col) => col.notNull())
      .addColumn('updated_at_ms', 'bigint', (col) => col.notNull())
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('tenant_rate_buckets').execute();
  },
};
