/**
 * The retention Schedule (docs/configuration.md, "Retention"): a Temporal Schedule, one per
 * task queue, that starts the `purgeAgedRows` workflow (src/workflows/purge-aged-rows.ts) every
 * RETENTION_INTERVAL_MS with the retention settings as its argument. Every worker ensures it at
 * start: create, or update when it exists (the newest worker's settings win), so several
 * workers starting at once all succeed. Overlap policy `SKIP`: a run still purging when the
 * next is due makes that one skipped (Temporal, "Schedule Overlap Policy"). The Temporal UI's
 * Schedules page lists it with its memo and its action's summary.
 */
import {
  ScheduleAlreadyRunning,
  ScheduleNotFoundError,
  ScheduleOverlapPolicy,
  type ScheduleClient,
  type ScheduleOptionsAction,
  type ScheduleOptions,
  type ScheduleSpec,
} from '@temporalio/client';
import { RETENTION_KINDS, type RetentionRunInput } from '../../contract/index.js';
import type { RetentionConfig } from '../config/retention.js';

/** The Schedule's id for a task queue: `retention-<task queue>`. */
export function retentionScheduleId(taskQueue: string): string {
  return `retention-${taskQueue}`;
}

/** What {@link ensureRetentionSchedule} did. */
export type EnsureOutcome = 'created' | 'updated';

/** How often an update retries a Schedule that was just created by another worker. */
const NOT_FOUND_RETRIES = 5;
const NOT_FOUND_DELAY_MS = 200;

function hours(ms: number): string {
  return ms > 0 ? `${ms / 3_600_000} h` : 'kept for ever';
}

/** The workflow run's input from the settings. */
export function retentionRunInput(retention: RetentionConfig): RetentionRunInput {
  return {
    retentionMs: { ...retention.retentionMs },
    batchSize: retention.batchSize,
    maxBatches: retention.maxBatchesPerRun,
  };
}

function scheduleParts(
  taskQueue: string,
  retention: RetentionConfig,
): { spec: ScheduleSpec; action: ScheduleOptionsAction; policies: ScheduleOptions['policies'] } {
  const kinds = RETENTION_KINDS.map((kind) => `${kind} ${hours(retention.retentionMs[kind])}`);
  return {
    spec: { intervals: [{ every: retention.intervalMs }] },
    action: {
      type: 'startWorkflow',
      workflowType: 'purgeAgedRows',
      workflowId: `retention-purge-${taskQueue}`,
      taskQueue,
      args: [retentionRunInput(retention)],
      staticSummary: `purge rows past their retention (${retention.batchSize} per batch)`,
      staticDetails: [
        `**Retention** ${kinds.join(', ')}`,
        `**Batches** ${retention.batchSize} rows each, at most ${retention.maxBatchesPerRun} per run`,
        '**Source** src/temporal/retention-schedule.ts; docs/configuration.md, "Retention"',
      ].join('\n\n'),
    },
    policies: { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: retention.intervalMs },
  };
}

/**
 * Creates the retention Schedule of `taskQueue`, or updates it to `retention` when it exists.
 * @returns `created` or `updated`
 * @throws the SDK's errors when the frontend is unreachable or refuses the Schedule
 */
export async function ensureRetentionSchedule(
  schedules: ScheduleClient,
  options: { taskQueue: string; retention: RetentionConfig },
): Promise<EnsureOutcome> {
  const scheduleId = retentionScheduleId(options.taskQueue);
  const parts = scheduleParts(options.taskQueue, options.retention);
  try {
    await schedules.create({
      scheduleId,
      ...parts,
      memo: {
        purpose: 'durable-sandbox: delete finished rows past their retention',
        docs: 'docs/configuration.md#retention',
      },
    });
    return 'created';
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
  }
  // Another worker created it, maybe a moment ago: its describe may not answer yet.
  for (let attempt = 1; ; attempt += 1) {
    try {
      await schedules.getHandle(scheduleId).update((current) => ({ ...current, ...parts }));
      return 'updated';
    } catch (err) {
      if (!(err instanceof ScheduleNotFoundError) || attempt >= NOT_FOUND_RETRIES) throw err;
      await new Promise((resolve) => setTimeout(resolve, NOT_FOUND_DELAY_MS * attempt));
    }
  }
}
