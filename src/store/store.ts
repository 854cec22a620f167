/**
 * {@link openStore}: connects, migrates, and returns the {@link Store}. Each method is one
 * short transaction composed of the row queries in sandboxes.ts, executions.ts and
 * idempotency.ts; fenced writes lock the sandbox first (fencing.ts).
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import { failCreatingSandbox } from './create-outcome.js';
import { openDatabase } from './database.js';
import { retireActiveExecutions, retireCurrentExecution, insertExecution } from './executions.js';
import { lockSandbox } from './fencing.js';
import { claimIdempotencyKey, findIdempotencyKey } from './idempotency.js';
import { migrateToLatest } from './migrations/index.js';
import { selectWaitingPods } from './waiting-pods.js';
import {
  deleteRootfsFloor,
  selectAllRootfsFloors,
  selectRootfsFloors,
  upsertRootfsFloor,
  noteImageRan,
  claimRootfsFloorProbe,
} from './rootfs-floors.js';
import { createOperationNotifier } from './operation-notifier.js';
import { sandboxChangeKey, sandboxWakeKeys } from './sandbox-changes.js';
import {
  feedChangeKey,
  insertEvent,
  sandboxEventBody,
  selectFeedEvents,
  webhookEventId,
} from './event-feed.js';
import {
  advanceOperation,
  appendPlacement,
  insertOperation,
  markCancellationRequested,
  outcomeRecorded,
  setCreatePath,
  selectOperation,
  selectOperationPage,
} from './operations.js';
import {
  insertSandbox,
  selectSandbox,
  selectSandboxPage,
  selectSandboxRow,
  toRecord,
  setFailedWhileCreating,
  setPod,
  setRetiredOutcome,
  isRunningAt,
  setDeleted,
  setExpireTime,
  setRunning,
  setRunningLost,
  selectRunningBefore,
  selectCreatingPodUids,
  setLost,
} from './sandboxes.js';
import {
  MAX_LABELS,
  POD_LOST,
  createsOutstanding,
  exceededLimit,
  sameLabels,
  type CreateRateRefusal,
  type HeldLimitRefusal,
  type Labels,
} from '../../contract/index.js';
import { takeCreateTokenIn } from './create-rate.js';
import { replaceLabels } from './labels.js';
import { lockTenantAdmission, selectTenantUsage } from './tenant-usage.js';
import type { Database, SandboxesTable } from './schema.js';
import { resealWebhookSecrets, webhookStore } from './webhooks.js';
import { warmPoolStore } from './warm-pools.js';
import { retentionStore } from './retention.js';
import type {
  NewSandboxInput,
  NewSandboxOutcome,
  OperationTransition,
  RetireExecutionInput,
  Store,
  StoreOptions,
} from './types.js';

/** Thrown inside the create's transaction to roll it back when the create does not fit. */
class AdmissionRefused extends Error {
  constructor(
    readonly outcome:
      | { kind: 'refused'; refusal: HeldLimitRefusal }
      | { kind: 'rate_limited'; refusal: CreateRateRefusal },
  ) {
    super(
      `tenant limit ${outcome.kind === 'refused' ? outcome.refusal.limit : 'creates_per_second'} reached`,
    );
    this.name = 'AdmissionRefused';
  }
}

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
  const { db, dialect, sqliteDataVersion } = openDatabase(options);
  try {
    await migrateToLatest(db as Kysely<unknown>, dialect);
  } catch (error) {
    await db.destroy();
    throw error;
  }
  if (options.webhookSecretKeys) {
    try {
      await resealWebhookSecrets(db, options.webhookSecretKeys);
    } catch (error) {
      await db.destroy();
      throw error;
    }
  }
  const clock = options.clock ?? (() => new Date());
  const now = (): string => clock().toISOString();
  const notifier = createOperationNotifier(
    dialect === 'postgres'
      ? {
          databaseUrl: options.databaseUrl,
          send: async (channel, payload) => {
            await sql`select pg_notify(${channel}, ${payload})`.execute(db);
          },
        }
      : { sqliteDataVersion },
  );

  /**
   * Moves an operation forward inside `trx`. Returns the id to announce after the commit (the
   * notifier wakes local waiters and, on PostgreSQL, the other processes' ones).
   */
  async function advanceIn(
    trx: Kysely<Database>,
    id: string | undefined,
    transition: OperationTransition,
    at: string,
    result?: Selectable<SandboxesTable>,
  ): Promise<string | undefined> {
    if (id === undefined) return undefined;
    if (!(await advanceOperation(trx, id, transition, at, result))) return undefined;
    return id;
  }

  /** Runs `write` in a transaction, then wakes this process's waiters of what it changed. */
  async function writing<T>(
    write: (trx: Kysely<Database>, changed: Set<string>) => Promise<T>,
  ): Promise<T> {
    const changed = new Set<string>();
    const result = await db.transaction().execute((trx) => write(trx, changed));
    for (const id of changed) notifier.notify(id);
    return result;
  }

  /**
   * Keeps the `sandbox.lost` event of a sandbox just marked lost, in the same transaction, so
   * the feed has it whatever happens next (its webhooks are signalled by the caller's process:
   * src/activities/webhook-delivery.ts `announceEvent`).
   * @returns the sandbox's tenant (undefined when the row is gone)
   */
  async function recordLostEvent(
    trx: Kysely<Database>,
    sandboxId: string,
    at: string,
  ): Promise<string | undefined> {
    const row = await selectSandboxRow(trx, sandboxId);
    if (!row) return undefined;
    const sandbox = toRecord(row);
    const type = 'sandbox.lost';
    await insertEvent(trx, dialect, {
      id: webhookEventId(sandbox, type),
      tenant: sandbox.tenant,
      sandbox_id: sandbox.id,
      type,
      payload: JSON.stringify(sandboxEventBody(sandbox, type)),
      created_at: at,
    });
    return sandbox.tenant;
  }

  /** Adds `id` to `changed` when defined. */
  const note = (changed: Set<string>, id: string | undefined): void => {
    if (id !== undefined) changed.add(id);
  };

  /**
   * The create's transaction: the tenant's admission lock, the idempotency key, a token of the
   * create rate (src/store/create-rate.ts), the held limits check (src/store/tenant-usage.ts), then the
   * sandbox, its first execution and its operation. A replay takes no token.
   * @throws AdmissionRefused when the create does not fit (the transaction rolls back)
   */
  function createSandboxIn(input: NewSandboxInput): Promise<NewSandboxOutcome> {
    return db.transaction().execute(async (trx): Promise<NewSandboxOutcome> => {
      const createdAt = now();
      await lockTenantAdmission(trx, dialect, input.tenant);
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
      if (input.createRate !== undefined) {
        const rate = input.createRate;
        const take = await takeCreateTokenIn(trx, input.tenant, rate, Date.parse(createdAt));
        if (!take.admitted) {
          throw new AdmissionRefused({
            kind: 'rate_limited',
            refusal: {
              usage: createsOutstanding(take.millitokens, rate),
              limitValue: rate.perSecond,
              burst: rate.burst,
              retryAfterMs: take.retryAfterMs,
            },
          });
        }
      }
      if (input.limits !== undefined) {
        const usage = await selectTenantUsage(trx, input.tenant);
        const refusal = exceededLimit(usage, input.resources, input.limits);
        if (refusal) throw new AdmissionRefused({ kind: 'refused', refusal });
      }
      const sandbox = await insertSandbox(trx, input, createdAt);
      await insertExecution(trx, { sandboxId: input.id, generation: 1, attempt: 1 }, createdAt);
      await insertOperation(
        trx,
        {
          id: input.operationId,
          type: 'sandbox.create',
          tenant: input.tenant,
          sandboxId: input.id,
          phase: 'creating_pod',
          deadlineAt:
            input.deadlineMs === undefined
              ? null
              : new Date(Date.parse(createdAt) + input.deadlineMs).toISOString(),
          traceId: input.traceId,
        },
        createdAt,
      );
      return { kind: 'created', sandbox };
    });
  }

  return {
    webhooks: webhookStore(db, now, options.webhookSecretKeys, {
      dialect,
      onEvent: (tenant) => notifier.notify(feedChangeKey(tenant)),
    }),
    events: {
      list: (tenant, query) => selectFeedEvents(db, tenant, query),
      waitForEvent: (tenant, timeoutMs, signal) =>
        notifier.waitForChange(feedChangeKey(tenant), timeoutMs, signal),
    },
    warmPools: warmPoolStore(db, now),
    retention: retentionStore(db, clock),

    async createSandbox(input) {
      try {
        return await createSandboxIn(input);
      } catch (err) {
        // Rolled back: no row, no execution, no operation, no token, and the key is not claimed.
        if (err instanceof AdmissionRefused) return err.outcome;
        throw err;
      }
    },

    getTenantUsage(tenant) {
      return selectTenantUsage(db, tenant);
    },

    getSandbox(tenant, id) {
      return selectSandbox(db, id, tenant);
    },

    getSandboxById(id) {
      return selectSandbox(db, id);
    },

    setExpireTime(tenant, sandboxId, expireTime) {
      return writing(async (trx, changed) => {
        const wrote = await setExpireTime(trx, { sandboxId, tenant }, expireTime, now());
        if (wrote) changed.add(sandboxChangeKey(sandboxId));
        return wrote ? selectSandbox(trx, sandboxId, tenant) : undefined;
      });
    },

    listSandboxes(tenant, options) {
      return selectSandboxPage(db, dialect, tenant, options);
    },

    updateLabels(tenant, sandboxId, update) {
      return writing(async (trx, changed) => {
        await lockSandbox(trx, dialect, sandboxId);
        const current = await selectSandbox(trx, sandboxId, tenant);
        if (!current) return { kind: 'not_found' as const };
        const labels = nextLabels(current.labels, update);
        const count = Object.keys(labels).length;
        if (count > MAX_LABELS) return { kind: 'too_many' as const, count };
        if (sameLabels(labels, current.labels))
          return { kind: 'updated' as const, sandbox: current };
        await replaceLabels(trx, current, labels, now());
        changed.add(sandboxChangeKey(sandboxId));
        const sandbox = await selectSandbox(trx, sandboxId, tenant);
        if (!sandbox) throw new Error(`sandbox ${sandboxId} vanished while its labels changed`);
        return { kind: 'updated' as const, sandbox };
      });
    },

    recordPod(input) {
      return writing(async (trx, changed) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const wrote = await setPod(trx, input, { name: input.podName, uid: input.podUid }, at);
        if (wrote) {
          const transition = { phase: 'waiting_for_ip' as const, runId: input.runId };
          note(changed, await advanceIn(trx, input.operationId, transition, at));
          if (input.operationId && input.createPath) {
            await setCreatePath(trx, input.operationId, input.createPath);
            changed.add(input.operationId);
          }
        }
        return wrote;
      });
    },

    markSandboxRunning(input) {
      return writing(async (trx, changed) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        // An outcome recorded first (at a decision: a refusal, then an IP) stands: the sandbox is
        // not marked running under an operation that already says failed or cancelled.
        if (input.operationId && (await outcomeRecorded(trx, input.operationId))) {
          return 'fenced' as const;
        }
        const marked = await setRunning(trx, input, input.podIp, at);
        const result = marked
          ? ('marked' as const)
          : (await isRunningAt(trx, input, input.podIp))
            ? ('already_running' as const)
            : ('fenced' as const);
        if (result !== 'fenced' && input.operationId) {
          const transition = {
            phase: 'finished' as const,
            status: 'succeeded' as const,
            error: null,
            runId: input.runId,
          };
          // The create's result: the sandbox as it is at this moment, running with its IP.
          const produced = await selectSandboxRow(trx, input.sandboxId);
          note(changed, await advanceIn(trx, input.operationId, transition, at, produced));
        }
        return result;
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

    insertOperation(input) {
      return writing(async (trx) => {
        await insertOperation(trx, { ...input, deadlineAt: null }, now());
      });
    },

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

    getOperation(tenant, id) {
      return selectOperation(db, id, tenant);
    },

    listOperations(tenant, options) {
      return selectOperationPage(db, tenant, options);
    },

    waitForOperationChange(id, timeoutMs, signal) {
      return notifier.waitForChange(id, timeoutMs, signal);
    },

    async waitForSandboxChange(sandbox, timeoutMs, signal) {
      // One listener per key, all ended once one answers.
      const done = new AbortController();
      const any = signal ? AbortSignal.any([signal, done.signal]) : done.signal;
      try {
        const keys = sandboxWakeKeys(sandbox);
        let pending = keys.length;
        return await new Promise<boolean>((resolve) => {
          for (const key of keys) {
            void notifier.waitForChange(key, timeoutMs, any).then((changed) => {
              pending -= 1;
              if (changed || pending === 0) resolve(changed);
            });
          }
        });
      } finally {
        done.abort();
      }
    },

    async markRunningSandboxesLost(input) {
      const tenants = new Set<string>();
      const ids = await db.transaction().execute(async (trx) => {
        const at = now();
        const lost = await setRunningLost(trx, { code: POD_LOST, message: input.reason }, at);
        for (const id of lost) {
          await retireActiveExecutions(trx, id, POD_LOST, at);
          const tenant = await recordLostEvent(trx, id, at);
          if (tenant !== undefined) tenants.add(tenant);
        }
        return lost;
      });
      for (const tenant of tenants) notifier.notify(feedChangeKey(tenant));
      return ids;
    },

    recordRootfsFloor(floor) {
      return upsertRootfsFloor(db, floor);
    },
    noteImageRan(ran) {
      return noteImageRan(db, ran);
    },
    claimRootfsFloorProbe(probe) {
      return claimRootfsFloorProbe(db, probe);
    },

    listRootfsFloors(images) {
      return selectRootfsFloors(db, images);
    },
    listAllRootfsFloors() {
      return selectAllRootfsFloors(db);
    },
    deleteRootfsFloor(image) {
      return deleteRootfsFloor(db, image);
    },

    findIdempotencyKey(tenant, key) {
      return findIdempotencyKey(db, tenant, key);
    },

    async markSandboxLost(input) {
      const tenant = await db.transaction().execute(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const failure = { code: POD_LOST, message: input.reason };
        if (!(await setLost(trx, input, failure, at))) return undefined;
        await retireActiveExecutions(trx, input.sandboxId, POD_LOST, at);
        return recordLostEvent(trx, input.sandboxId, at);
      });
      if (tenant === undefined) return false;
      notifier.notify(feedChangeKey(tenant));
      return true;
    },

    listRunningSandboxes(input) {
      return selectRunningBefore(db, input);
    },

    listCreatingPodUids(limit = 10_000) {
      return selectCreatingPodUids(db, limit);
    },

    listWaitingPods(page) {
      return selectWaitingPods(db, page);
    },

    async ping() {
      await sql`select 1`.execute(db);
    },

    async close() {
      await notifier.close();
      await db.destroy();
    },
  };
}

/**
 * A sandbox's labels after an update (Store.updateLabels): `labels` itself without `keys`, else
 * `current` with each key of `keys` set from `labels`, or removed when `labels` has none.
 */
export function nextLabels(
  current: Labels,
  update: { labels: Labels; keys?: readonly string[] },
): Record<string, string> {
  if (update.keys === undefined) return { ...update.labels };
  const next: Record<string, string> = { ...current };
  for (const key of update.keys) {
    if (Object.hasOwn(update.labels, key)) next[key] = update.labels[key] as string;
    else delete next[key];
  }
  return next;
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
