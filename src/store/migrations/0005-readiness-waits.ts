/**
 * `readiness_waits`: the readiness waits in progress, one row per waiting pod (docs/architecture.md,
 * "Waiting costs nothing"). The wait activity records its task token here and completes
 * asynchronously; any worker's informers look the row up by the pod's uid and complete the
 * activity through Temporal. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const readinessWaits: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
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
      .execute();
    // The workflow's store steps clear the waits of their operation.
    await db.schema
      .createIndex('readiness_waits_operation_id')
      .on('readiness_waits')
      .column('operation_id')
      .execute();
    // The decider finds the creates waiting without a recorded wait (their worker died first).
    await db.schema
      .createIndex('operations_status_phase_updated_at')
      .on('operations')
      .columns(['status', 'phase', 'updated_at'])
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex('operations_status_phase_updated_at').execute();
    await db.schema.dropTable('readiness_waits').execute();
  },
};
