/**
 * Installs the Temporal SDK Runtime once per process: its logs go to our pino logger, and, when
 * asked, its worker metrics go to a Prometheus exporter. What our own code logs through the SDK
 * (`log` in workflows and activities) passes at `info`; the SDK's own lines (worker state
 * changes, bundler output, core) at `warn` unless TEMPORAL_LOG_LEVEL says otherwise.
 */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';
import { EXPECTED_FAILURE_LOG_ATTRIBUTE } from '../../contract/index.js';

const PINO_LEVELS: Record<LogLevel, 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  TRACE: 'trace',
  DEBUG: 'debug',
  INFO: 'info',
  WARN: 'warn',
  ERROR: 'error',
};

/** Options of {@link installRuntime}. */
export interface RuntimeOptions {
  /** `host:port` for the SDK's Prometheus exporter (served at `/metrics`); unset: no SDK metrics. */
  prometheusBindAddress?: string;
}

/**
 * Installs the Runtime; call before creating any NativeConnection or Worker.
 * @throws the SDK's IllegalStateError when a Runtime was already installed in this process
 */
export function installRuntime(logger: Logger, options: RuntimeOptions = {}): void {
  const requested = (process.env.TEMPORAL_LOG_LEVEL?.toUpperCase() ?? 'WARN') as LogLevel;
  const sdkLevel = requested in PINO_LEVELS ? requested : 'WARN';
  Runtime.install({
    // The least severe level either side wants; sdkLogForwarder filters the rest.
    logger: new DefaultLogger(
      SEVERITY.indexOf(sdkLevel) < SEVERITY.indexOf('INFO') ? sdkLevel : 'INFO',
      sdkLogForwarder(logger, sdkLevel),
    ),
    ...(options.prometheusBindAddress
      ? {
          telemetryOptions: {
            metrics: {
              // Prometheus conventions: units in the names, durations in seconds.
              prometheus: {
                bindAddress: options.prometheusBindAddress,
                countersTotalSuffix: true,
                unitSuffix: true,
                useSecondsForDurations: true,
              },
            },
          },
        }
      : {}),
  });
}

/** SDK components whose log lines are our code's (`log` in workflows and activities). */
const OUR_COMPONENTS = new Set(['workflow', 'activity']);

/** Log levels in order of severity. */
const SEVERITY: LogLevel[] = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'];

/**
 * A DefaultLogger sink that writes SDK log entries to pino: our code's lines (`sdkComponent`
 * `workflow` or `activity`) from `info` up, the SDK's own from `sdkLevel` up. A line marked as
 * an expected failure's (src/workflows/expected-failure-logs.ts) counts as `debug`, whatever its
 * level, and is then held to its component's bound like any other: the line it is for, the SDK's
 * closing `Workflow failed` (a warn with `sdkComponent` `worker`: Temporal TypeScript SDK,
 * workflow/src/logs.ts), is written at debug only when `sdkLevel` is DEBUG or TRACE
 * (TEMPORAL_LOG_LEVEL; the default WARN drops it) and pino's level lets debug through; a marked
 * line of our code's (`workflow`, `activity`: from `info` up) is never written. The meta (the
 * activity's or workflow's attributes and the call's fields) becomes the line's fields; a line
 * below `logger`'s level (pino's `isLevelEnabled`) is dropped having read only `sdkComponent` and
 * the expected-failure attribute of its meta, never copying the rest.
 */
export function sdkLogForwarder(logger: Logger, sdkLevel: LogLevel) {
  return (entry: { level: LogLevel; message: string; meta?: Record<string, unknown> }): void => {
    const ours = OUR_COMPONENTS.has(String(entry.meta?.sdkComponent));
    const least = SEVERITY.indexOf(ours ? 'INFO' : sdkLevel);
    // An expected failure's closing line (src/workflows/expected-failure-logs.ts) is not a warning.
    const level =
      entry.meta?.[EXPECTED_FAILURE_LOG_ATTRIBUTE] !== undefined ? 'DEBUG' : entry.level;
    if (SEVERITY.indexOf(level) < least) return;
    // Below pino's level the line is dropped: skip building its fields (a copy of the meta).
    if (!logger.isLevelEnabled(PINO_LEVELS[level])) return;
    const fields = withSerializableErrors(entry.meta);
    delete fields.taskToken; // opaque and long; activityId and workflowId name the task
    if (!ours) fields.source = 'temporal-sdk';
    logger[PINO_LEVELS[level]](fields, entry.message);
  };
}

/**
 * The SDK puts failures under `error` or `failure`; pino serializes an Error (message, type,
 * stack, cause) only under `err`, and would print `{}` otherwise.
 */
function withSerializableErrors(
  meta: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const fields: Record<string, unknown> = { ...meta };
  for (const key of ['error', 'failure']) {
    if (fields[key] instanceof Error && fields.err === undefined) {
      fields.err = fields[key];
      delete fields[key];
    }
  }
  return fields;
}
