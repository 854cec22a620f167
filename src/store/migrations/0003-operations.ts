/**
 * Operations in the store (docs/architecture.md, "Consistency between Temporal and the store"):
 * one row per operation, written by the API when it accepts the operation and by the workflow
 * as it moves, so an operation is read with one indexed query and outlives the retention of its
 * Temporal execution. `done` is not a column: an operation is done when its phase is `finished`.
 *
 * Rows for the creates stored before this migration are backfilled from their sandboxes (the
 * sandbox names its create operation): `creating` -> running, `failed` -> failed with the
 * sandbox's failure, any other state -> succeeded.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export const operationsTable: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('operations')
      .addColumn('id', 'text', (col) => col.primaryKey())
      .addColumn('type', 'text', (col) => col.notNull())
      .addColumn('tenant', 'text', (col) => col.notNull())
      .addColumn('sandbox_id', 'text', (col) => col.notNull())
      .addColumn('status', 'text', (col) => col.notNull())
      .addColumn('phase', 'text', (col) => col.notNull())
      .addColumn('error_code', 'text')
      .addColumn('error_message', 'text')
      .addColumn('error_details', 'text')
      .addColumn('workflow_id', 'text', (col) => col.notNull())
      .addColumn('run_id', 'text')
      .addColumn('deadline_at', 'text')
      .addColumn('created_at', 'text', (col) => col.notNull())
      .addColumn('updated_at', 'text', (col) => col.notNull())
      .addCheckConstraint(
        'operations_status_check',
        sql`status in ('running', 'succeeded', 'failed', 'cancelled')`,
      )
      .execute();
    // Serves the operation list, newest first, with and without a status filter.
    await db.schema
      .createIndex('operations_tenant_created_at')
      .on('operations')
      .columns(['tenant', 'created_at', 'id'])
      .execute();
    await db.schema
      .createIndex('operations_tenant_status_created_at')
      .on('operations')
      .columns(['tenant', 'status', 'created_at', 'id'])
      .execute();
    await sql`
      insert into operations (id, type, tenant, sandbox_id, status, phase, error_code,
        error_message, error_details, workflow_id, run_id, deadline_at, created_at, updated_at)
      select operation_id, 'sandbox.create', tenant, id,
        case state when 'creating' then 'running' when 'failed' then 'failed' else 'succeeded' end,
        case state when 'creating' then 'creating_pod' else 'finished' end,
        case state when 'failed' then failure_code end,
        case state when 'failed' then failure_message end,
        case state when 'failed' then '{}' end,
        operation_id, null, null, created_at, updated_at
      from sandboxes`.execute(db);
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('operations').execute();
  },
};
