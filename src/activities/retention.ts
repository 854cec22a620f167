/**
 * The purge of rows that aged out (docs/configuration.md, "Retention"), run by the
 * `purgeAgedRows` workflow that the retention Schedule starts (src/temporal/retention-schedule.ts):
 * kind after kind, batch after batch (src/store/retention.ts), a heartbeat after each batch, until
 * every kind is done or the run's cap of batches is reached.
 */
import { Context } from '@temporalio/activity';
import {
  RETENTION_KINDS,
  type RetentionKind,
  type RetentionRunInput,
  type RetentionRunResult,
} from '../../contract/index.js';
import type { Store } from '../store/index.js';

/** What the retention activity needs. */
export interface RetentionActivityDeps {
  store: Store;
}

/** Builds the retention activity. */
export function retentionActivities(deps: RetentionActivityDeps) {
  return {
    /**
     * Deletes every row older than its kind's retention, at most `batchSize` rows per
     * statement and `maxBatches` statements in all. Cutoffs are taken once, at the start, so
     * the run ends even while rows keep aging. A heartbeat after each batch carries the counts
     * so far (the Temporal UI shows them on the pending activity).
     * @returns the rows deleted per kind, the batches run and whether every kind was done
     * @throws the store's error (the activity is retried; what was deleted stays deleted)
     * @throws CancelledFailure when the run is cancelled (between two batches)
     */
    async purgeAgedRows(input: RetentionRunInput): Promise<RetentionRunResult> {
      const context = Context.current();
      const startedAtMs = Date.now();
      const purged = Object.fromEntries(RETENTION_KINDS.map((kind) => [kind, 0])) as Record<
        RetentionKind,
        number
      >;
      let batches = 0;
      for (const kind of RETENTION_KINDS) {
        const retentionMs = input.retentionMs[kind];
        if (!(retentionMs > 0)) continue;
        const before = new Date(startedAtMs - retentionMs).toISOString();
        for (;;) {
          if (batches >= input.maxBatches) return { purged, batches, complete: false };
          context.cancellationSignal.throwIfAborted();
          const deleted = await deps.store.retention.purgeBatch(kind, before, input.batchSize);
          batches += 1;
          purged[kind] += deleted;
          context.heartbeat({ kind, batches, purged });
          if (deleted < input.batchSize) break;
        }
      }
      return { purged, batches, complete: true };
    },
  };
}
