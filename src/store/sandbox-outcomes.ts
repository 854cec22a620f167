/**
 * The store's writes of how a sandbox's execution ends (Store.markSandboxRunning,
 * retireExecution, markSandboxFailed, markSandboxDeleted): the sandbox and its operation change
 * together, in one transaction that locks the sandbox first (src/store/fencing.ts).
 */
import { retireActiveExecutions, retireCurrentExecution } from './executions.js';
import { lockSandbox, lockSandboxRow } from './fencing.js';
import { outcomeRecorded } from './operations.js';
import {
  selectSandbox,
  selectSandboxRow,
  setFailedWhileCreating,
  setRetiredOutcome,
  isRunningAt,
  setDeleted,
  setRunning,
  toRecord,
} from './sandboxes.js';
import type { RetireExecutionInput, Store } from './types.js';
import type { StoreContext } from './store-context.js';
import { recordPodIn } from './sandbox-writes.js';

/** The retirement reason that, with a null failure, marks the sandbox `deleted`. */
export const DELETED_REASON = 'deleted';

/** The outcome writes of {@link Store}, over the store's shared context. */
export function sandboxOutcomeWrites(
  ctx: StoreContext,
): Pick<Store, 'markSandboxRunning' | 'retireExecution'> {
  const { dialect, now, writing, advanceIn, note } = ctx;
  return {
    markSandboxRunning(input) {
      return writing(async (trx, changed) => {
        // Read once, locked: its lifetime, and (unless a write answers it) the sandbox it answers.
        let row = await lockSandboxRow(trx, dialect, input.sandboxId);
        // A pod recorded in the same transaction (a warm claim's), whatever the outcome below.
        if (input.pod && row) {
          const { name: podName, uid: podUid, createPath } = input.pod;
          const recorded = { ...input, podName, podUid, createPath };
          row = (await recordPodIn(ctx, trx, changed, recorded)) ?? row;
        }
        const at = now();
        // An outcome recorded first (at a decision: a refusal, then an IP) stands: the sandbox is
        // not marked running under an operation that already says failed or cancelled.
        if (input.operationId && (await outcomeRecorded(trx, input.operationId))) {
          return { result: 'fenced' as const };
        }
        if (!row) return { result: 'fenced' as const };
        const ttlMs = row.ttl_ms == null ? null : Number(row.ttl_ms);
        const marked = await setRunning(trx, input, input.podIp, at, ttlMs);
        const result = marked
          ? ('marked' as const)
          : (await isRunningAt(trx, input, input.podIp))
            ? ('already_running' as const)
            : ('fenced' as const);
        if (result === 'fenced') return { result };
        // The sandbox as it is at this moment, running with its IP: the create's result too.
        const produced = marked ?? row;
        if (input.operationId) {
          const transition = {
            phase: 'finished' as const,
            status: 'succeeded' as const,
            error: null,
            runId: input.runId,
          };
          note(changed, await advanceIn(trx, input.operationId, transition, at, produced));
        }
        return { result, sandbox: toRecord(produced) };
      });
    },
    retireExecution(input) {
      return writing(async (trx, changed) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        // Compensation has finished whether or not this call still retires the execution (a
        // delete may have retired it first): the operation is done either way.
        const failure = input.failure ?? { code: input.reason, message: input.reason };
        note(
          changed,
          await advanceIn(
            trx,
            input.operationId,
            {
              phase: 'finished',
              status: failure.code === 'cancelled' ? 'cancelled' : 'failed',
              error: { ...failure, details: {} },
              runId: input.runId,
            },
            at,
          ),
        );
        const retired = await retireCurrentExecution(trx, input, input.reason, at);
        if (!retired) return { retired: false };
        await setRetiredOutcome(trx, input, retirementOutcome(input), at);
        return { retired: true };
      });
    },
  };
}
/** What a retirement does to the sandbox (see Store.retireExecution). */
function retirementOutcome(
  input: RetireExecutionInput,
):
  | { state: 'failed'; failure: { code: string; message: string } }
  | { state: 'deleted'; failure: null } {
  if (input.failure !== null) return { state: 'failed', failure: input.failure };
  if (input.reason === DELETED_REASON) return { state: 'deleted', failure: null };
  return {
    state: 'failed',
    failure: { code: input.reason, message: `execution retired: ${input.reason}` },
  };
}

/**
 * Store.markSandboxFailed and markSandboxDeleted: the sandbox ends, its executions retired and
 * its operation finished, in one transaction.
 */
export function sandboxEndWrites(
  ctx: StoreContext,
): Pick<Store, 'markSandboxFailed' | 'markSandboxDeleted'> {
  const { dialect, now, writing, advanceIn, note } = ctx;
  return {
    markSandboxFailed(input) {
      return writing(async (trx, changed) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const failed = await setFailedWhileCreating(trx, input.sandboxId, input, at);
        if (failed) {
          await retireActiveExecutions(trx, input.sandboxId, input.code, at);
          const sandbox = await selectSandbox(trx, input.sandboxId);
          const transition = {
            phase: 'finished' as const,
            status: 'failed' as const,
            error: { code: input.code, message: input.message, details: {} },
          };
          note(changed, await advanceIn(trx, sandbox?.operationId, transition, at));
        }
        return failed;
      });
    },
    markSandboxDeleted(input) {
      return writing(async (trx, changed) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const deleted = await setDeleted(trx, input.sandboxId, at);
        if (deleted) await retireActiveExecutions(trx, input.sandboxId, DELETED_REASON, at);
        if (input.operationId) {
          const transition = { phase: 'finished' as const, status: 'succeeded' as const };
          const produced = await selectSandboxRow(trx, input.sandboxId);
          note(changed, await advanceIn(trx, input.operationId, transition, at, produced));
        }
        return deleted;
      });
    },
  };
}
