/**
 * Fencing (docs/architecture.md, "Consistency between Temporal and the store"): a write made on
 * behalf of an execution — a sandbox's
 * (generation, activation attempt) — lands only while that execution is current, so a stale
 * workflow run or a retried activity can never overwrite a newer one's state.
 *
 * Two parts, used together inside one transaction:
 * - {@link lockSandbox} serializes every fenced write of a sandbox (PostgreSQL: the sandbox row
 *   `FOR UPDATE`; SQLite: the `BEGIN IMMEDIATE` write lock already does it), so the predicate
 *   below is evaluated against committed state, never against a snapshot a concurrent writer
 *   is about to change.
 * - {@link isCurrentExecution} is the predicate that goes into the conditional UPDATE; the
 *   caller checks `numUpdatedRows` to learn whether it wrote.
 */
import {
  expressionBuilder,
  sql,
  type Expression,
  type Kysely,
  type Selectable,
  type SqlBool,
} from 'kysely';
import type { DialectName } from './database.js';
import type { Database, SandboxesTable } from './schema.js';
import type { ExecutionRef } from '../../contract/index.js';

/**
 * Locks the sandbox's row until the transaction ends (PostgreSQL); a no-op on SQLite, whose
 * transactions hold the database write lock from their start.
 * @param trx a transaction; outside one the lock would be released at once
 */
export async function lockSandbox(
  trx: Kysely<Database>,
  dialect: DialectName,
  sandboxId: string,
): Promise<void> {
  if (dialect !== 'postgres') return;
  await trx.selectFrom('sandboxes').select('id').where('id', '=', sandboxId).forUpdate().execute();
}

/**
 * {@link lockSandbox} that reads the row too: the sandbox as it stays until the transaction ends
 * (PostgreSQL: `SELECT * ... FOR UPDATE`; SQLite: a plain read under the transaction's write
 * lock), so a write that needs the row before it changes it reads it once.
 * @param trx a transaction; outside one the lock would be released at once
 * @returns the row, or undefined when there is no such sandbox (nothing locked)
 */
export async function lockSandboxRow(
  trx: Kysely<Database>,
  dialect: DialectName,
  sandboxId: string,
): Promise<Selectable<SandboxesTable> | undefined> {
  const query = trx.selectFrom('sandboxes').selectAll().where('id', '=', sandboxId);
  return (dialect === 'postgres' ? query.forUpdate() : query).executeTakeFirst();
}

/**
 * True when the sandbox is at `ref.generation`, the execution (generation, attempt) exists and
 * is `active`, and the sandbox has no newer execution (a later generation, or a later attempt
 * of the same generation). Built of uncorrelated subqueries, so it fits the WHERE of an UPDATE
 * on any table.
 */
export function isCurrentExecution(ref: ExecutionRef): Expression<SqlBool> {
  const eb = expressionBuilder<Database, never>();
  return eb.and([
    eb.exists(
      eb
        .selectFrom('sandboxes as fenced_sandbox')
        .select(sql.lit(1).as('found'))
        .where('fenced_sandbox.id', '=', ref.sandboxId)
        .where('fenced_sandbox.generation', '=', ref.generation),
    ),
    eb.exists(
      eb
        .selectFrom('executions as fenced_execution')
        .select(sql.lit(1).as('found'))
        .where('fenced_execution.sandbox_id', '=', ref.sandboxId)
        .where('fenced_execution.generation', '=', ref.generation)
        .where('fenced_execution.activation_attempt', '=', ref.attempt)
        .where('fenced_execution.state', '=', 'active'),
    ),
    eb.not(
      eb.exists(
        eb
          .selectFrom('executions as newer_execution')
          .select(sql.lit(1).as('found'))
          .where('newer_execution.sandbox_id', '=', ref.sandboxId)
          .where((newer) =>
            newer.or([
              newer('newer_execution.generation', '>', ref.generation),
              newer.and([
                newer('newer_execution.generation', '=', ref.generation),
                newer('newer_execution.activation_attempt', '>', ref.attempt),
              ]),
            ]),
          ),
      ),
    ),
  ]);
}
