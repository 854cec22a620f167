/**
 * How long finished rows are kept, and how they are purged (docs/configuration.md,
 * "Retention"): one retention per kind of row (src/store/retention.ts) in whole hours, 0 to keep
 * that kind for ever, and the purge's batch size, per-run cap and schedule interval.
 * Defaults, and why:
 * - idempotency keys 24 h: Stripe removes a key once it is at least 24 hours old ("Idempotent
 *   requests"), long enough for any client's retries of one create;
 * - events 168 h (7 days, WEBHOOK_EVENT_RETENTION_MS): the 3-day webhook delivery window and a
 *   margin, and the span a webhook recover reaches back (docs/webhooks.md);
 * - finished sandboxes, finished operations and delivery records 720 h (30 days): the default
 *   retention of a Temporal Cloud namespace, so a row goes about when its workflow's history
 *   does, and the span Stripe lists events and their delivery attempts for.
 */
import {
  RETENTION_KINDS,
  WEBHOOK_EVENT_RETENTION_MS,
  type RetentionKind,
} from '../../contract/index.js';

/** The variable that sets each kind's retention, in hours. */
export const RETENTION_VARIABLES: Readonly<Record<RetentionKind, string>> = {
  sandboxes: 'SANDBOX_RETENTION_HOURS',
  operations: 'OPERATION_RETENTION_HOURS',
  events: 'EVENT_RETENTION_HOURS',
  idempotency_keys: 'IDEMPOTENCY_KEY_RETENTION_HOURS',
  webhook_deliveries: 'WEBHOOK_DELIVERY_RETENTION_HOURS',
};

/** Each kind's default retention, in hours. */
export const DEFAULT_RETENTION_HOURS: Readonly<Record<RetentionKind, number>> = {
  sandboxes: 720,
  operations: 720,
  events: WEBHOOK_EVENT_RETENTION_MS / 3_600_000,
  idempotency_keys: 24,
  webhook_deliveries: 720,
};

/** Rows one purge statement deletes at most (RETENTION_BATCH_SIZE). */
export const DEFAULT_RETENTION_BATCH_SIZE = 1_000;

/** Batches one scheduled run deletes at most, over every kind (RETENTION_MAX_BATCHES_PER_RUN). */
export const DEFAULT_RETENTION_MAX_BATCHES_PER_RUN = 1_000;

/** How often the purge runs, in ms (RETENTION_INTERVAL_MS): hourly. */
export const DEFAULT_RETENTION_INTERVAL_MS = 3_600_000;

/** The retention settings as the worker's schedule and its activity read them. */
export interface RetentionConfig {
  /** Each kind's retention in ms; 0: kept for ever. */
  retentionMs: Record<RetentionKind, number>;
  /** Rows per batch (one statement, one transaction). */
  batchSize: number;
  /** Batches per scheduled run, over every kind; the next run goes on. */
  maxBatchesPerRun: number;
  /** The schedule's interval, in ms. */
  intervalMs: number;
}

/** A retention variable that is not acceptable; `variable` names it. */
export class RetentionConfigProblem extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(message);
    this.name = 'RetentionConfigProblem';
  }
}

const HOUR_MS = 3_600_000;
/** The longest retention accepted, in hours (10 years). */
const MAX_RETENTION_HOURS = 87_600;

function integer(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  bounds: { min: number; max: number },
): number {
  const raw = env[name]?.trim();
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!/^\d+$/.test(raw) || value < bounds.min || value > bounds.max) {
    throw new RetentionConfigProblem(
      name,
      `must be an integer from ${bounds.min} to ${bounds.max}, got "${raw}"`,
    );
  }
  return value;
}

/**
 * Reads the retention variables.
 * @throws RetentionConfigProblem naming the first variable that is not an integer in range, or
 *   IDEMPOTENCY_KEY_RETENTION_HOURS when it outlasts OPERATION_RETENTION_HOURS (a kept key would
 *   name a purged operation)
 */
export function parseRetention(env: NodeJS.ProcessEnv): RetentionConfig {
  const hours = Object.fromEntries(
    RETENTION_KINDS.map((kind) => [
      kind,
      integer(env, RETENTION_VARIABLES[kind], DEFAULT_RETENTION_HOURS[kind], {
        min: 0,
        max: MAX_RETENTION_HOURS,
      }),
    ]),
  ) as Record<RetentionKind, number>;
  const forever = (h: number) => (h === 0 ? Infinity : h);
  if (forever(hours.idempotency_keys) > forever(hours.operations)) {
    throw new RetentionConfigProblem(
      RETENTION_VARIABLES.idempotency_keys,
      `${hours.idempotency_keys || 'forever (0)'} outlasts OPERATION_RETENTION_HOURS ` +
        `(${hours.operations}): a kept key would name a purged operation`,
    );
  }
  return {
    retentionMs: Object.fromEntries(
      RETENTION_KINDS.map((kind) => [kind, hours[kind] * HOUR_MS]),
    ) as Record<RetentionKind, number>,
    batchSize: integer(env, 'RETENTION_BATCH_SIZE', DEFAULT_RETENTION_BATCH_SIZE, {
      min: 1,
      max: 100_000,
    }),
    maxBatchesPerRun: integer(
      env,
      'RETENTION_MAX_BATCHES_PER_RUN',
      DEFAULT_RETENTION_MAX_BATCHES_PER_RUN,
      { min: 1, max: 1_000_000 },
    ),
    intervalMs: integer(env, 'RETENTION_INTERVAL_MS', DEFAULT_RETENTION_INTERVAL_MS, {
      min: 60_000,
      max: 7 * 24 * HOUR_MS,
    }),
  };
}

/** Every variable {@link parseRetention} reads. */
export const RETENTION_CONFIG_VARIABLES = [
  ...RETENTION_KINDS.map((kind) => RETENTION_VARIABLES[kind]),
  'RETENTION_BATCH_SIZE',
  'RETENTION_MAX_BATCHES_PER_RUN',
  'RETENTION_INTERVAL_MS',
] as const;
