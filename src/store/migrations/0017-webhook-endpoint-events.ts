/**
 * `webhook_endpoint_events` (docs/webhooks.md, "What is kept"): one row per event and endpoint
 * that hears it, with where its delivery stands (contract/webhook.ts `WebhookEventState`) and its
 * `round`, which a recover raises so only the delivery holding the current round sends it. So an
 * event refused at delivery, or given up, stays known and can be sent again. An expand step only
 * (a new table), so the release before runs on it unchanged. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const webhookEndpointEvents: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('webhook_endpoint_events')
      .addColumn('endpoint_id', 'text', (col) => col.notNull())
      .addColumn('event_id', 'text', (col) => col.notNull())
      .addColumn('sandbox_id', 'text', (col) => col.notNull())
      .addColumn('event_type', 'text', (col) => col.notNull())
      .addColumn('status', 'text', (col) => col.notNull())
      .addColumn('round', 'integer', (col) => col.notNull().defaultTo(0))
      .addColumn('holder', 'text')
      .addColumn('emitted_at', 'text', (col) => col.notNull())
      .addColumn('updated_at', 'text', (col) => col.notNull())
      .addPrimaryKeyConstraint('webhook_endpoint_events_pk', ['endpoint_id', 'event_id'])
      .execute();
    await db.schema
      .createIndex('webhook_endpoint_events_emitted_at')
      .on('webhook_endpoint_events')
      .columns(['endpoint_id', 'emitted_at'])
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('webhook_endpoint_events').execute();
  },
};
