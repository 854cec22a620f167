/**
 * Rows that age out (docs/configuration.md, "Retention"): the kinds of rows that each have a
 * retention. Types and constants only, so the workflow bundle may import it.
 */

/**
 * The kinds of rows that age out, each with its own retention: `sandboxes` (deleted, failed or lost),
 * `operations` (finished), `events` (the feed's and webhooks' events), `idempotency_keys`,
 * `webhook_deliveries` (delivery attempts and finished per-endpoint delivery states).
 */
export const RETENTION_KINDS = [
  'sandboxes',
  'operations',
  'events',
  'idempotency_keys',
  'webhook_deliveries',
] as const;

/** One of {@link RETENTION_KINDS}. */
export type RetentionKind = (typeof RETENTION_KINDS)[number];

/** What one scheduled purge run is told (the `purgeAgedRows` workflow's and activity's input). */
export interface RetentionRunInput {
  /** Each kind's retention in ms; 0: that kind is kept for ever. */
  retentionMs: Record<RetentionKind, number>;
  /** Rows per batch (one statement). */
  batchSize: number;
  /** Batches this run deletes at most, over every kind; the next run goes on from there. */
  maxBatches: number;
}

/** What one purge run did. */
export interface RetentionRunResult {
  /** Rows deleted per kind. */
  purged: Record<RetentionKind, number>;
  /** Batches run (statements of a kind; an empty last batch counts). */
  batches: number;
  /** False when the run stopped at `maxBatches` with rows still due. */
  complete: boolean;
}
