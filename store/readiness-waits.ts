/**
 * Readiness waits in progress (docs/architecture.md, "Waiting costs nothing"): one row per
 * waiting pod, holding the task token that completes its wait activity.
 */
import type { Kysely } from 'kysely';
import type { Database, ReadinessWaitsTable } from './schema.js';
import type { ReadinessWait, UnrecordedWait } from './types.js';
import type { WaitPlacement } from '../contract/index.js';

/**
 * Records a wait, replacing the row of an earlier attempt for the same pod
 * (`INSERT … ON CONFLICT (pod_uid) DO UPDATE`).
 */
export async function upsertReadinessWait(
  db: Kysely<Database>,
  wait: Omit<ReadinessWait, 'createdAt'>,
  at: string,
): Promise<void> {
  const row: ReadinessWaitsTable = {
    pod_uid: wait.podUid,
    pod_name: wait.podName,
    task_token: wait.taskToken,
    operation_id: wait.operationId,
    sandbox_id: wait.sandboxId,
    workflow_id: wait.workflowId,
    run_id: wait.runId,
    activity_id: wait.activityId,
    placement: wait.placement ? JSON.stringify(wait.placement) : null,
    created_at: at,
  };
  const { pod_uid: _podUid, ...update } = row;
  await db
    .insertInto('readiness_waits')
    .values(row)
    .onConflict((conflict) => conflict.column('pod_uid').doUpdateSet(update))
    .execute();
}

/** The wait for the pod with `podUid`, if one is in progress. */
export async function selectReadinessWait(
  db: Kysely<Database>,
  podUid: string,
): Promise<ReadinessWait | undefined> {
  const row = await db
    .selectFrom('readiness_waits')
    .selectAll()
    .where('pod_uid', '=', podUid)
    .executeTakeFirst();
  return row && toWait(row);
}

/**
 * The waits in progress in pod uid order (the primary key: one index range scan, no sort),
 * those after the pod uid `after` when given, at most `limit` when given. A caller pages by
 * passing the last row's `podUid` as the next `after` (keyset paging, so rows removed meanwhile
 * shift nothing).
 */
export async function selectReadinessWaits(
  db: Kysely<Database>,
  page: { after?: string; limit?: number } = {},
): Promise<ReadinessWait[]> {
  let query = db.selectFrom('readiness_waits').selectAll().orderBy('pod_uid');
  if (page.after !== undefined) query = query.where('pod_uid', '>', page.after);
  if (page.limit !== undefined) query = query.limit(page.limit);
  const rows = await query.execute();
  return rows.map(toWait);
}

/**
 * Removes the wait of `podUid` recorded with `taskToken` (a newer attempt's row stays).
 * @returns whether a row was removed
 */
export async function deleteReadinessWait(
  db: Kysely<Database>,
  podUid: string,
  taskToken: string,
): Promise<boolean> {
  const result = await db
    .deleteFrom('readiness_waits')
    .where('pod_uid', '=', podUid)
    .where('task_token', '=', taskToken)
    .executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/** Removes every wait of the operation (its workflow has moved on). */
export async function deleteReadinessWaitsOf(
  db: Kysely<Database>,
  operationId: string,
): Promise<void> {
  await db.deleteFrom('readiness_waits').where('operation_id', '=', operationId).execute();
}

function toWait(row: ReadinessWaitsTable): ReadinessWait {
  return {
    podUid: row.pod_uid,
    podName: row.pod_name,
    taskToken: row.task_token,
    operationId: row.operation_id,
    sandboxId: row.sandbox_id,
    workflowId: row.workflow_id,
    runId: row.run_id,
    activityId: row.activity_id,
    ...(row.placement ? { placement: JSON.parse(row.placement) as WaitPlacement } : {}),
    createdAt: row.created_at,
  };
}

/**
 * The creates waiting for an IP (status `running`, phase `waiting_for_ip`) since before
 * `updatedBefore` (ISO-8601) with no wait recorded: their wait activity may have been started
 * by a worker that died before it recorded the wait. Newest first (`updated_at`, then id, both
 * descending): a wait lost lately comes before the creates stuck long ago (a workflow terminated
 * while it waited, its operation left `running`). At most `limit`; `before` (the last row of a
 * page) continues after that row (keyset paging over the index
 * `operations_status_phase_updated_at`); `operationId` reads that one create only.
 */
export async function selectUnrecordedWaits(
  db: Kysely<Database>,
  input: {
    updatedBefore: string;
    limit: number;
    before?: { updatedAt: string; operationId: string };
    operationId?: string;
  },
): Promise<UnrecordedWait[]> {
  const { before } = input;
  let query = db
    .selectFrom('operations')
    .select(['id', 'workflow_id', 'updated_at'])
    .where('status', '=', 'running')
    .where('phase', '=', 'waiting_for_ip')
    .where('updated_at', '<', input.updatedBefore)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('readiness_waits')
            .select('readiness_waits.pod_uid')
            .whereRef('readiness_waits.operation_id', '=', 'operations.id'),
        ),
      ),
    );
  if (input.operationId !== undefined) query = query.where('id', '=', input.operationId);
  if (before) {
    query = query.where((eb) =>
      eb.or([
        eb('updated_at', '<', before.updatedAt),
        eb.and([eb('updated_at', '=', before.updatedAt), eb('id', '<', before.operationId)]),
      ]),
    );
  }
  const rows = await query
    .orderBy('updated_at', 'desc')
    .orderBy('id', 'desc')
    .limit(input.limit)
    .execute();
  return rows.map((row) => ({
    operationId: row.id,
    workflowId: row.workflow_id,
    updatedAt: row.updated_at,
  }));
}
