/**
 * The `purgeAgedRows` workflow (docs/configuration.md, "Retention"): what the retention Schedule
 * (src/temporal/retention-schedule.ts) starts every interval. One activity deletes rows that aged
 * out, batch after batch with heartbeats, until done or the run's cap; the Schedule's overlap
 * policy `SKIP` keeps runs from overlapping, and the next run goes on where a capped one stopped.
 *
 * Deterministic: no I/O, time only from the workflow API.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { CreateActivities } from '../activities/index.js';
import type { RetentionRunInput, RetentionRunResult } from '../../contract/index.js';

/**
 * The purge: long (a large backlog), alive while it heartbeats after each batch; a failed
 * attempt is retried a few times, and the next scheduled run tries again anyway.
 */
const purgeStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '1 minute',
  retry: { initialInterval: '5 seconds', backoffCoefficient: 2, maximumAttempts: 3 },
});

/**
 * Runs one purge.
 * @returns the rows deleted per kind, the batches run and whether everything due was deleted
 * @throws ActivityFailure when the purge failed three times (the next run tries again)
 */
export async function purgeAgedRows(input: RetentionRunInput): Promise<RetentionRunResult> {
  return purgeStep.purgeAgedRows(input);
}
