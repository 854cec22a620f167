/**
 * The store's writes of operation rows (Store.beginDelete, advanceOperation,
 * recordOperationOutcome, recordOperationRunId, recordPlacement, markCancellationRequested):
 * each one transaction, after which the operation's waiters wake.
 */
import { failCreatingSandbox } from './create-outcome.js';
import { lockSandbox } from './fencing.js';
import { appendPlacement, insertOperation, markCancellationRequested } from './operations.js';
import type { OperationTransition, Store } from './types.js';
import type { StoreContext } from './store-context.js';

/** The operation writes of {@link Store}, over the store's shared context. */
export function operationWrites(
  ctx: StoreContext,
): Pick<
  Store,
  | 'beginDelete'
  | 'advanceOperation'
  | 'recordOperationRunId'
  | 'recordPlacement'
  | 'markCancellationRequested'
> {
  const { db, dialect, now, writing, advanceIn, note } = ctx;
  return {
    beginDelete(input) {
      return writing(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const running = await trx
          .selectFrom('operations')
          .select('id')
          .where('tenant', '=', input.tenant)
          .where('sandbox_id', '=', input.sandboxId)
          .where('type', '=', 'sandbox.delete')
          .where('status', '=', 'running')
          .orderBy('created_at')
          .executeTakeFirst();
        if (running) return { operationId: running.id, inserted: false };
        const operation = { ...input, type: 'sandbox.delete' as const, phase: 'deleting' as const };
        await insertOperation(trx, { ...operation, deadlineAt: null }, now());
        return { operationId: input.id, inserted: true };
      });
    },
    advanceOperation(id, transition) {
      return writing(async (trx, changed) => {
        const wrote = await advanceIn(trx, id, transition, now());
        note(changed, wrote);
        return wrote !== undefined;
      });
    },
    async recordOperationRunId(id, runId) {
      const result = await db
        .updateTable('operations')
        .set({ run_id: runId })
        .where('id', '=', id)
        .where('run_id', 'is', null)
        .executeTakeFirst();
      return result.numUpdatedRows > 0n;
    },
    recordPlacement(operationId, placement) {
      return writing(async (trx, changed) => {
        const wrote = await appendPlacement(trx, operationId, placement, now());
        if (!wrote) return false;
        changed.add(operationId);
        return true;
      });
    },
    markCancellationRequested(id) {
      return writing(async (trx, changed) => {
        const wrote = await markCancellationRequested(trx, id, now());
        if (wrote) changed.add(id);
        return wrote;
      });
    },
  };
}

/**
 * Store.recordOperationOutcome: the early outcome of a create (phase `compensating`), with its
 * sandbox failed in the same transaction (src/store/create-outcome.ts).
 */
export function operationOutcomeWrite(ctx: StoreContext): Pick<Store, 'recordOperationOutcome'> {
  const { dialect, now, writing, advanceIn, note } = ctx;
  return {
    recordOperationOutcome(input) {
      return writing(async (trx, changed) => {
        // The sandbox's row first, as every fenced write takes it (src/store/fencing.ts).
        const owner = await trx
          .selectFrom('operations')
          .select('sandbox_id')
          .where('id', '=', input.operationId)
          .executeTakeFirst();
        if (owner) await lockSandbox(trx, dialect, owner.sandbox_id);
        if (input.podUid !== undefined) {
          const sandbox = await trx
            .selectFrom('operations')
            .innerJoin('sandboxes', 'sandboxes.id', 'operations.sandbox_id')
            .select('sandboxes.pod_uid')
            .where('operations.id', '=', input.operationId)
            .executeTakeFirst();
          if (sandbox?.pod_uid !== input.podUid) return false;
        }
        const transition: OperationTransition = {
          phase: 'compensating',
          status: input.status,
          error: input.error,
          runId: input.runId,
        };
        const at = now();
        const wrote = await advanceIn(trx, input.operationId, transition, at);
        // The sandbox changes with its operation, in this transaction (src/store/create-outcome.ts).
        if (wrote !== undefined) await failCreatingSandbox(trx, input.operationId, at);
        note(changed, wrote);
        return wrote !== undefined;
      });
    },
  };
}
