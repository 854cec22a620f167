/**
 * Drops `readiness_waits` (migration 0005): a readiness wait is completed by workflow id and an
 * activity id made from its pod's uid (docs/architecture.md, "Waiting costs nothing"), so
 * Temporal's pending activity is its only record and no task token is kept. The index
 * `operations_status_phase_updated_at` of 0005 stays: the decider's reconcile reads the waiting
 * creates through it. The release before never used the table. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const dropReadinessWaits: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('readiness_waits').execute();
  },

  /** Re-creates the table as 0005 and 0006 left it (empty: in-flight waits complete by id). */
  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('readiness_waits')
      .addColumn('pod_uid', 'text', (col) => col.primaryKey())
      .addColumn('pod_name', 'text', (col) => col.notNull())
      .addColumn('task_token', 'text', (col) => col.notNull())
      .addColumn('operation_id', 'text', (col) => col.notNull())
      .addColumn('sandbox_id', 'text', (col) => col.notNull())
      .addColumn('workflow_id', 'text', (col) => col.notNull())
      .addColumn('run_id', 'text', (col) => col.notNull())
      .addColumn('activity_id', 'text', (col) => col.notNull())
      .addColumn('created_at', 'text', (col) => col.notNull())
      .addColumn('placement', 'text')
      .execute();
    await db.schema
      .createIndex('readiness_waits_operation_id')
      .on('readiness_waits')
      .column('operation_id')
      .execute();
  },
};
