/**
 * Sandbox lifetimes (docs/api.md, "Lifetimes"): `sandboxes.ttl_ms` (the lifetime asked for, in
 * ms, counted from running; null: none), `sandboxes.running_at` (when it first ran, ISO-8601),
 * `sandboxes.expire_time` (ISO-8601; null: no expiry), and `operations.cause` (why a delete was
 * started: `requested` or `expired`; null for creates and for deletes stored before). Rows
 * written before have no lifetime, as they had none.
 */
import type { Kysely, Migration } from 'kysely';

export const sandboxLifetimes: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('sandboxes').addColumn('ttl_ms', 'bigint').execute();
    await db.schema.alterTable('sandboxes').addColumn('running_at', 'text').execute();
    await db.schema.alterTable('sandboxes').addColumn('expire_time', 'text').execute();
    await db.schema.alterTable('operations').addColumn('cause', 'text').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').dropColumn('cause').execute();
    await db.schema.alterTable('sandboxes').dropColumn('expire_time').execute();
    await db.schema.alterTable('sandboxes').dropColumn('running_at').execute();
    await db.schema.alterTable('sandboxes').dropColumn('ttl_ms').execute();
  },
};
