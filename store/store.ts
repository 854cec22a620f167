/**
 * {@link openStore}: connects, migrates, and returns the {@link Store}. Each method is one
 * short transaction composed of the row queries in sandboxes.ts, executions.ts and
 * idempotency.ts; fenced writes lock the sandbox first (fencing.ts).
 */
import { sql, type Kysely } from 'kysely';
import { openDatabase } from './database.js';
import { retireActiveExecutions, retireCurrentExecution, insertExecution } from './executions.js';
import { lockSandbox } from './fencing.js';
import { claimIdempotencyKey, findIdempotencyKey } from './idempotency.js';
import { migrateToLatest } from './migrations/index.js';
import {
  insertSandbox,
  selectSandbox,
  selectSandboxPage,
  setFailedWhileCreating,
  setPod,
  setRetiredOutcome,
  isRunningAt,
  setDeleted,
  setRunning,
  setRunningLost,
  selectRunningBefore,
  setLost,
} from './sandboxes.js';
import { POD_LOST } from '../contract/index.js';
import type { RetireExecutionInput, Store, StoreOptions } from './types.js';

/** The retirement reason that, with a null failure, marks the sandbox `deleted`. */
export const DELETED_REASON = 'deleted';

/**
 * Opens the store and applies pending migrations (a no-op when the schema is current).
 * SQLite runs in WAL mode with a busy timeout; its file's directory is created if missing.
 * @throws StoreOptionsError when the options name no usable database
 * @throws MigrationError when a migration fails (the connection is closed first)
 * @throws the driver's error when PostgreSQL is unreachable
 */
export async function openStore(options: StoreOptions): Promise<Store> {
  const { db, dialect } = openDatabase(options);
  try {
    await migrateToLatest(db as Kysely<unknown>, dialect);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  const clock = options.clock ?? (() => new Date());
  const now = (): string => clock().toISOString();

  return {
    createSandbox(input) {
      return db.transaction().execute(async (trx) => {
        const createdAt = now();
        if (input.idempotency !== undefined) {
          const { key, requestHash } = input.idempotency;
          const claimed = await claimIdempotencyKey(trx, {
            tenant: input.tenant,
            key,
            requestHash,
            operationId: input.operationId,
            sandboxId: input.id,
            createdAt,
          });
          if (!claimed) {
            const earlier = await findIdempotencyKey(trx, input.tenant, key);
            if (earlier === undefined) {
              throw new Error(`idempotency key of tenant ${input.tenant} vanished while read`);
            }
            return earlier.requestHash === requestHash
              ? { kind: 'replay', operationId: earlier.operationId, sandboxId: earlier.sandboxId }
              : { kind: 'conflict', operationId: earlier.operationId };
          }
        }
        const sandbox = await insertSandbox(trx, input, createdAt);
        await insertExecution(trx, { sandboxId: input.id, generation: 1, attempt: 1 }, createdAt);
        return { kind: 'created', sandbox };
      });
    },

    getSandbox(tenant, id) {
      return selectSandbox(db, id, tenant);
    },

    getSandboxById(id) {
      return selectSandbox(db, id);
    },

    listSandboxes(tenant, options) {
      return selectSandboxPage(db, tenant, options);
    },

    recordPod(input) {
      return db.transaction().execute(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        return setPod(trx, input, { name: input.podName, uid: input.podUid }, now());
      });
    },

    markSandboxRunning(input) {
      return db.transaction().execute(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        if (await setRunning(trx, input, input.podIp, now())) return 'marked' as const;
        return (await isRunningAt(trx, input, input.podIp)) ? 'already_running' : 'fenced';
      });
    },

    retireExecution(input) {
      return db.transaction().execute(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const retired = await retireCurrentExecution(trx, input, input.reason, at);
        if (!retired) return { retired: false };
        await setRetiredOutcome(trx, input, retirementOutcome(input), at);
        return { retired: true };
      });
    },

    markSandboxFailed(input) {
      return db.transaction().execute(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const failed = await setFailedWhileCreating(trx, input.sandboxId, input, at);
        if (failed) await retireActiveExecutions(trx, input.sandboxId, input.code, at);
        return failed;
      });
    },

    markSandboxDeleted(input) {
      return db.transaction().execute(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const deleted = await setDeleted(trx, input.sandboxId, at);
        if (deleted) await retireActiveExecutions(trx, input.sandboxId, DELETED_REASON, at);
        return deleted;
      });
    },

    markRunningSandboxesLost(input) {
      return db.transaction().execute(async (trx) => {
        const at = now();
        const ids = await setRunningLost(trx, { code: POD_LOST, message: input.reason }, at);
        for (const id of ids) await retireActiveExecutions(trx, id, POD_LOST, at);
        return ids;
      });
    },

    markSandboxLost(input) {
      return db.transaction().execute(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const failure = { code: POD_LOST, message: input.reason };
        const lost = await setLost(trx, input, failure, at);
        if (lost) await retireActiveExecutions(trx, input.sandboxId, POD_LOST, at);
        return lost;
      });
    },

    listRunningSandboxes(input) {
      return selectRunningBefore(db, input.updatedBefore, input.limit);
    },

    async ping() {
      await sql`select 1`.execute(db);
    },

    async close() {
      await db.destroy();
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
