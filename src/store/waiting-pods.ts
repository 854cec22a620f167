/**
 * The creates waiting for their pod's IP (docs/architecture.md, "Waiting costs nothing"): the
 * list a readiness decider's reconcile decides against its caches. Read from the operations and
 * sandboxes the create path writes anyway; the wait itself is recorded only by Temporal.
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';
import type { WaitingPod } from './types.js';

/**
 * The operations `running` in phase `waiting_for_ip` whose sandbox names a pod, oldest first
 * (`updated_at`, then id), after the row `after` when given, at most `limit`: one range scan of
 * the index `operations_status_phase_updated_at` (migration 0005), keyset paging so rows that
 * leave the phase meanwhile shift nothing. With `outcomeRecorded`: the operations `failed` in
 * phase `compensating` whose sandbox is neither retired nor deleted (Store.listWaitingPods says
 * why), the same way.
 */
export async function selectWaitingPods(
  db: Kysely<Database>,
  page: {
    limit: number;
    after?: Pick<WaitingPod, 'updatedAt' | 'operationId'>;
    outcomeRecorded?: boolean;
  },
): Promise<WaitingPod[]> {
  const { after } = page;
  const [status, phase] = page.outcomeRecorded
    ? ['failed', 'compensating']
    : ['running', 'waiting_for_ip'];
  let query = db
    .selectFrom('operations')
    .innerJoin('sandboxes', 'sandboxes.id', 'operations.sandbox_id')
    .select([
      'operations.id as operation_id',
      'operations.workflow_id',
      'operations.updated_at',
      'sandboxes.id as sandbox_id',
      'sandboxes.pod_name',
      'sandboxes.pod_uid',
    ])
    .where('operations.status', '=', status)
    .where('operations.phase', '=', phase)
    .where('sandboxes.pod_uid', 'is not', null)
    .where('sandboxes.pod_name', 'is not', null);
  // Not yet retired, nor deleted: the sandbox is `failed` with the outcome (src/store/create-outcome.ts),
  // or still `creating` (a row written before it was).
  if (page.outcomeRecorded) query = query.where('sandboxes.state', 'in', ['creating', 'failed']);
  if (after) {
    query = query.where((eb) =>
      eb.or([
        eb('operations.updated_at', '>', after.updatedAt),
        eb.and([
          eb('operations.updated_at', '=', after.updatedAt),
          eb('operations.id', '>', after.operationId),
        ]),
      ]),
    );
  }
  const rows = await query
    .orderBy('operations.updated_at')
    .orderBy('operations.id')
    .limit(page.limit)
    .execute();
  return rows.map((row) => ({
    operationId: row.operation_id,
    workflowId: row.workflow_id,
    sandboxId: row.sandbox_id,
    podName: row.pod_name ?? '',
    podUid: row.pod_uid ?? '',
    updatedAt: row.updated_at,
  }));
}
