/**
 * `operations.result_sandbox`: the result of an operation that succeeded, as it was when the
 * operation ended (Google AIP-151: a long-running operation's response is what it produced when
 * it was done): the JSON of its sandbox's `sandboxes` row, written in the transaction that makes
 * the operation `succeeded` (src/store/sandbox-outcomes.ts). Null while running, for failed and cancelled
 * operations, and on rows a process of the release before writes during a rolling upgrade
 * (src/store/operation-results.ts reads those as before this migration, see there).
 *
 * Rows before: a succeeded operation whose sandbox is still as the operation left it (a create's
 * sandbox still `running` for that create, a delete's sandbox `deleted`) gets that row now, so
 * its result stays exact when the sandbox changes later. An expand step only; portable DDL, as
 * 0001.
 */
import { sql, type Kysely, type Migration } from 'kysely';

/** A succeeded operation and its sandbox's row as the operation left it. */
type LeftAsProduced = Record<string, unknown> & { result_of: string };

export const operationResult: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').addColumn('result_sandbox', 'text').execute();
    const { rows } = await sql<LeftAsProduced>`
      select operations.id as result_of, sandboxes.*
      from operations join sandboxes on sandboxes.id = operations.sandbox_id
      where operations.status = 'succeeded' and (
        (operations.type = 'sandbox.create' and sandboxes.state = 'running'
          and sandboxes.operation_id = operations.id)
        or (operations.type = 'sandbox.delete' and sandboxes.state = 'deleted'))`.execute(db);
    for (const { result_of: id, ...sandbox } of rows) {
      await sql`update operations set result_sandbox = ${JSON.stringify(sandbox)}
        where id = ${id}`.execute(db);
    }
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').dropColumn('result_sandbox').execute();
  },
};
