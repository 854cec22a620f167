/**
 * Execution rows: one per activation attempt of a sandbox generation (docs/architecture.md,
 * "Consistency between Temporal and the store").
 * Only the active, newest execution of a sandbox may change the sandbox; see fencing.ts.
 */
import type { Kysely } from 'kysely';
import { isCurrentExecution } from './fencing.js';
import type { Database } from './schema.js';
import type { ExecutionRef } from '../../contract/index.js';

/**
 * Inserts an active execution.
 * @param createdAt ISO-8601
 */
export async function insertExecution(
  db: Kysely<Database>,
  ref: ExecutionRef,
  createdAt: string,
): Promise<void> {
  await db
    .insertInto('executions')
    .values({
      sandbox_id: ref.sandboxId,
      generation: ref.generation,
      activation_attempt: ref.attempt,
      state: 'active',
      retired_reason: null,
      retired_at: null,
      created_at: createdAt,
    })
    .execute();
}

/**
 * Retires the execution if it is current (fencing.ts); a conditional UPDATE, so of two
 * concurrent calls only one changes the row.
 * @param retiredAt ISO-8601
 * @returns true when this call retired it
 */
export async function retireCurrentExecution(
  db: Kysely<Database>,
  ref: ExecutionRef,
  reason: string,
  retiredAt: string,
): Promise<boolean> {
  const result = await db
    .updateTable('executions')
    .set({ state: 'retired', retired_reason: reason, retired_at: retiredAt })
    .where('sandbox_id', '=', ref.sandboxId)
    .where('generation', '=', ref.generation)
    .where('activation_attempt', '=', ref.attempt)
    .where('state', '=', 'active')
    .where(isCurrentExecution(ref))
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}

/**
 * Retires every active execution of the sandbox, whatever its generation and attempt.
 * @param retiredAt ISO-8601
 * @returns how many it retired
 */
export async function retireActiveExecutions(
  db: Kysely<Database>,
  sandboxId: string,
  reason: string,
  retiredAt: string,
): Promise<number> {
  const result = await db
    .updateTable('executions')
    .set({ state: 'retired', retired_reason: reason, retired_at: retiredAt })
    .where('sandbox_id', '=', sandboxId)
    .where('state', '=', 'active')
    .executeTakeFirst();
  return Number(result.numUpdatedRows);
}
