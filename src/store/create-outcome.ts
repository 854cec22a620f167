/**
 * A create's failed outcome on its sandbox, written in the transaction that writes it on the
 * operation (docs/architecture.md, "The outcome at the decision"), so no reader ever finds the
 * operation `failed` (or `cancelled`) while its sandbox still says `creating`.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

/**
 * Moves the sandbox of the create operation `operationId` from `creating` to `failed`, with the
 * operation's recorded error as its failure (code and message), when the operation, read inside
 * `trx`, holds a failed or cancelled outcome (a cancelled create's sandbox is `failed` with code
 * `cancelled`, as its retirement writes it). Whichever writer's outcome the operation kept (the
 * first one wins: src/store/operations.ts `advanceOperation`), the sandbox shows that one.
 * Fenced: only the sandbox whose current create is this operation (`sandboxes.operation_id`),
 * and only while it is `creating`; anything else is left alone.
 * Call it inside the transaction that wrote the outcome, after the write, with the sandbox row
 * locked (src/store/fencing.ts `lockSandbox`) on PostgreSQL.
 * @param at ISO-8601, the sandbox's `updated_at`
 * @returns whether it wrote
 */
export async function failCreatingSandbox(
  trx: Kysely<Database>,
  operationId: string,
  at: string,
): Promise<boolean> {
  const operation = await trx
    .selectFrom('operations')
    .select(['sandbox_id', 'status', 'error_code', 'error_message'])
    .where('id', '=', operationId)
    .where('type', '=', 'sandbox.create')
    .executeTakeFirst();
  if (!operation || (operation.status !== 'failed' && operation.status !== 'cancelled')) {
    return false;
  }
  const code = operation.error_code ?? operation.status;
  const result = await trx
    .updateTable('sandboxes')
    .set({
      state: 'failed',
      failure_code: code,
      failure_message: operation.error_message ?? code,
      updated_at: at,
    })
    .where('id', '=', operation.sandbox_id)
    .where('operation_id', '=', operationId)
    .where('state', '=', 'creating')
    .executeTakeFirst();
  return result.numUpdatedRows > 0n;
}
