/**
 * Readiness waits in progress (docs/architecture.md, "Waiting costs nothing"): one row per
 * waiting pod, holding the task token that completes its wait activity.
 */
import type { Kysely } from 'kysely';
import type { Database, ReadinessWaitsTable } from './schema.js';
import type { ReadinessWait } from './types.js';
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

/** Every wait in progress, oldest first, at most `limit`. */
export async function selectReadinessWaits(
  db: Kysely<Database>,
  limit: number,
): Promise<ReadinessWait[]> {
  const rows = await db
    .selectFrom('readiness_waits')
    .selectAll()
    .orderBy('created_at')
    .orderBy('pod_uid')
    .limit(limit)
    .execute();
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
 * by a worker that died before it recorded the wait. At most `limit`, newest first: a wait lost
 * lately comes before the creates stuck long ago (a workflow terminated while it waited, its
 * operation left `running`), which would otherwise fill every page.
 */
export async function selectUnrecordedWaits(
  db: Kysely<Database>,
  updatedBefore: string,
  limit: number,
): Promise<Array<{ operationId: string; workflowId: string }>> {
  const rows = await db
    .selectFrom('operations')
    .select(['id', 'workflow_id'])
    .where('status', '=', 'running')
    .where('phase', '=', 'waiting_for_ip')
    .where('updated_at', '<', updatedBefore)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('readiness_waits')
            .select('readiness_waits.pod_uid')
            .whereRef('readiness_waits.operation_id', '=', 'operations.id'),
        ),
      ),
    )
    .orderBy('updated_at', 'desc')
    .limit(limit)
    .execute();
  return rows.map((row) => ({ operationId: row.id, workflowId: row.workflow_id }));
}
