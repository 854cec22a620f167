/**
 * The first schema: sandboxes, their executions, and idempotency keys. Portable DDL only
 * (text, integer; timestamps and JSON as text) so it runs unchanged on SQLite and PostgreSQL.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export const initialSchema: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('sandboxes')
      .addColumn('id', 'text', (col) => col.primaryKey())
      .addColumn('tenant', 'text', (col) => col.notNull())
      .addColumn('template', 'text', (col) => col.notNull())
      .addColumn('cpu', 'integer', (col) => col.notNull())
      .addColumn('memory_mib', 'integer', (col) => col.notNull())
      .addColumn('disk_mib', 'integer', (col) => col.notNull())
      .addColumn('state', 'text', (col) => col.notNull())
      .addColumn('generation', 'integer', (col) => col.notNull())
      .addColumn('operation_id', 'text', (col) => col.notNull())
      .addColumn('pod_name', 'text')
      .addColumn('pod_uid', 'text')
      .addColumn('pod_ip', 'text')
      .addColumn('failure_code', 'text')
      .addColumn('failure_message', 'text')
      .addColumn('created_at', 'text', (col) => col.notNull())
      .addColumn('updated_at', 'text', (col) => col.notNull())
      .addCheckConstraint(
        'sandboxes_state_check',
        sql`state in ('creating', 'running', 'failed', 'deleted')`,
      )
      .execute();
    // Serves listSandboxes: the tenant's sandboxes in (created_at, id) order.
    await db.schema
      .createIndex('sandboxes_tenant_created_at')
      .on('sandboxes')
      .columns(['tenant', 'created_at', 'id'])
      .execute();

    await db.schema
      .createTable('executions')
      .addColumn('sandbox_id', 'text', (col) =>
        col.notNull().references('sandboxes.id').onDelete('cascade'),
      )
      .addColumn('generation', 'integer', (col) => col.notNull())
      .addColumn('activation_attempt', 'integer', (col) => col.notNull())
      .addColumn('state', 'text', (col) => col.notNull())
      .addColumn('retired_reason', 'text')
      .addColumn('retired_at', 'text')
      .addColumn('created_at', 'text', (col) => col.notNull())
      .addPrimaryKeyConstraint('executions_pk', ['sandbox_id', 'generation', 'activation_attempt'])
      .addCheckConstraint('executions_state_check', sql`state in ('active', 'retired')`)
      .execute();

    await db.schema
      .createTable('idempotency_keys')
      .addColumn('tenant', 'text', (col) => col.notNull())
      .addColumn('key', 'text', (col) => col.notNull())
      .addColumn('request_hash', 'text', (col) => col.notNull())
      .addColumn('operation_id', 'text', (col) => col.notNull())
      .addColumn('sandbox_id', 'text', (col) => col.notNull())
      .addColumn('created_at', 'text', (col) => col.notNull())
      .addPrimaryKeyConstraint('idempotency_keys_pk', ['tenant', 'key'])
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('idempotency_keys').execute();
    await db.schema.dropTable('executions').execute();
    await db.schema.dropTable('sandboxes').execute();
  },
};
