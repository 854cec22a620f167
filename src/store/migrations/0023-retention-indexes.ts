/**
 * Rows that age out (docs/configuration.md, "Retention"; src/store/retention.ts): the indexes its
 * bounded purges walk, so one batch reads about as many index entries as it deletes, on a table
 * of any size. `operations (phase, end_time)` finds finished operations by age;
 * `idempotency_keys (created_at)`, `webhook_deliveries (created_at)` and
 * `webhook_endpoint_events (emitted_at)` find old rows; `webhook_endpoint_events (event_id)`
 * answers "is this event still being delivered" for one event. And `event_feed_horizons`: per
 * tenant, the highest event number a purge deleted, so the feed refuses a cursor only when that
 * tenant's own events after it are gone (docs/api.md, "Retention"). The release before neither
 * reads nor needs any of it. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

const INDEXES: ReadonlyArray<{ name: string; table: string; columns: string[] }> = [
  { name: 'operations_phase_end_time', table: 'operations', columns: ['phase', 'end_time'] },
  { name: 'idempotency_keys_created_at', table: 'idempotency_keys', columns: ['created_at'] },
  { name: 'webhook_deliveries_created_at', table: 'webhook_deliveries', columns: ['created_at'] },
  {
    name: 'webhook_endpoint_events_emitted',
    table: 'webhook_endpoint_events',
    columns: ['emitted_at'],
  },
  {
    name: 'webhook_endpoint_events_event',
    table: 'webhook_endpoint_events',
    columns: ['event_id'],
  },
];

export const retentionIndexes: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    for (const index of INDEXES) {
      await db.schema.createIndex(index.name).on(index.table).columns(index.columns).execute();
    }
    await db.schema
      .createTable('event_feed_horizons')
      .addColumn('tenant', 'text', (column) => column.primaryKey())
      .addColumn('purged_through_seq', 'bigint', (column) => column.notNull())
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('event_feed_horizons').execute();
    for (const index of [...INDEXES].reverse()) {
      await db.schema.dropIndex(index.name).execute();
    }
  },
};
