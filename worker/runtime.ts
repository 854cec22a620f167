/**
 * Installs the Temporal SDK Runtime once per process: its logs go to our pino logger (workflow
 * `log.*` calls, worker state changes, bundler output) at `warn` unless TEMPORAL_LOG_LEVEL says
 * otherwise, and, when asked, its worker metrics go to a Prometheus exporter.
 */
import { DefaultLogger, Runtime, type LogLevel } from '@temporalio/worker';
import type { Logger } from 'pino';

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
  const level = (process.env.TEMPORAL_LOG_LEVEL?.toUpperCase() ?? 'WARN') as LogLevel;
  const sdkLogger = logger.child({ source: 'temporal-sdk' });
  Runtime.install({
    logger: new DefaultLogger(level in PINO_LEVELS ? level : 'WARN', (entry) => {
      sdkLogger[PINO_LEVELS[entry.level]](withSerializableErrors(entry.meta), entry.message);
    }),
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
