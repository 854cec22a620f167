/**
 * The event feed (docs/webhooks.md, "The event feed"): `webhook_events.seq`, one number per kept event, increasing
 * in the order events are written, so `GET /v1/events?after=` reads a tenant's events from a
 * cursor. Events already kept are numbered in the order they were written (`created_at`, then
 * id). An expand step only (a nullable column and a unique index): the release before writes
 * rows without a number, which the feed does not serve. Portable DDL, as 0001.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export const eventFeed: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('webhook_events').addColumn('seq', 'bigint').execute();
    const { rows } = await sql<{ id: string }>`
      select id from webhook_events order by created_at, id`.execute(db);
    let seq = 0;
    for (const row of rows) {
      seq += 1;
      await sql`update webhook_events set seq = ${seq} where id = ${row.id}`.execute(db);
    }
    await db.schema
      .createIndex('webhook_events_seq')
      .unique()
      .on('webhook_events')
      .column('seq')
      .execute();
    await db.schema
      .createIndex('webhook_events_tenant_seq')
      .on('webhook_events')
      .columns(['tenant', 'seq'])
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex('webhook_events_tenant_seq').execute();
    await db.schema.dropIndex('webhook_events_seq').execute();
    await db.schema.alterTable('webhook_events').dropColumn('seq').execute();
  },
};
