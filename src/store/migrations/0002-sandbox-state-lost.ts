/**
 * Sandbox state `lost`: a sandbox that was `running` whose pod is gone (found at the start of an
 * embedded stack whose simulated cluster starts empty, tools/start.ts). Widens the state check.
 *
 * PostgreSQL swaps the check constraint. SQLite cannot alter a constraint, and dropping
 * `sandboxes` would cascade to `executions` (foreign keys are on, and cannot be turned off
 * inside the migration's transaction), so `executions` is copied aside, both tables are rebuilt
 * with the same columns, and the rows are copied back.
 */
import { PostgresAdapter, sql, type Kysely, type Migration } from 'kysely';

const STATES = sql`state in ('creating', 'running', 'failed', 'deleted', 'lost')`;
const STATES_BEFORE = sql`state in ('creating', 'running', 'failed', 'deleted')`;

async function createSandboxesTable(
  db: Kysely<unknown>,
  name: string,
  states: typeof STATES,
): Promise<void> {
  await db.schema
    .createTable(name)
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
    .addCheckConstraint('sandboxes_state_check', states)
    .execute();
}

async function createExecutionsTable(db: Kysely<unknown>): Promise<void> {
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
}

/** SQLite: rebuilds `sandboxes` with `states`, keeping every row of both tables. */
async function rebuildSqlite(db: Kysely<unknown>, states: typeof STATES): Promise<void> {
  await sql`create table executions_aside as select * from executions`.execute(db);
  await db.schema.dropTable('executions').execute();
  await createSandboxesTable(db, 'sandboxes_rebuilt', states);
  await sql`insert into sandboxes_rebuilt select * from sandboxes`.execute(db);
  await db.schema.dropTable('sandboxes').execute();
  await sql`alter table sandboxes_rebuilt rename to sandboxes`.execute(db);
  await db.schema
    .createIndex('sandboxes_tenant_created_at')
    .on('sandboxes')
    .columns(['tenant', 'created_at', 'id'])
    .execute();
  await createExecutionsTable(db);
  await sql`insert into executions select * from executions_aside`.execute(db);
  await db.schema.dropTable('executions_aside').execute();
}

async function setStates(db: Kysely<unknown>, states: typeof STATES): Promise<void> {
  if (db.getExecutor().adapter instanceof PostgresAdapter) {
    await sql`alter table sandboxes drop constraint sandboxes_state_check`.execute(db);
    await sql`alter table sandboxes add constraint sandboxes_state_check check (${states})`.execute(
      db,
    );
    return;
  }
  await rebuildSqlite(db, states);
}

export const sandboxStateLost: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await setStates(db, STATES);
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await sql`update sandboxes set state = 'failed' where state = 'lost'`.execute(db);
    await setStates(db, STATES_BEFORE);
  },
};
