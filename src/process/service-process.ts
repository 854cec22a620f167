/**
 * The start-up `npm run api` and `npm run worker` share (src/api/main.ts, src/worker/main.ts):
 * the OpenTelemetry SDK first when the environment asks for traces, then the configuration with
 * TEMPORAL_ADDRESS required, then the process's own start; a failed start is reported as
 * ./startup-failure.ts says (one plain line on stderr, or a JSON line with LOG_FORMAT=json) and
 * the process exits 1.
 */
import type { Logger } from 'pino';
import { ConfigError, loadConfig, type Config } from '../config/index.js';
import { tracingRequested, type Tracing } from '../tracing/spans.js';
import { exitAfterStartupFailure, reportStartupFailure } from './startup-failure.js';

/** What the shared start-up hands the process's own start. */
export interface ServiceStart {
  /** The configuration from the environment (src/config/index.ts, `loadConfig`). */
  config: Config;
  /** TEMPORAL_ADDRESS (`host:port`), which both processes require. */
  temporalAddress: string;
  /** The started OpenTelemetry SDK, to shut down on stop; undefined when traces are not asked for. */
  tracing: Tracing | undefined;
}

/** The process {@link runServiceProcess} starts. */
export interface ServiceProcess {
  /** The process, as messages name it: `npm run <role>`, `<role> failed to start`. */
  role: 'api' | 'worker';
  /** The process's logger (./logger.ts, `createLogger(role)`): a failure's JSON line goes there. */
  logger: Logger;
  /**
   * Whether the start is over, so that a failure is the run's (the worker's run ends in error):
   * logged at fatal as `<role> failed`, a log line like any other. Unset: every failure is the
   * start's.
   */
  started?: () => boolean;
}

/**
 * Runs the shared start-up, then `start`; returns at once, before either has run past its first
 * await. The OpenTelemetry SDK (src/tracing/sdk.ts, service name `durable-sandbox-<role>`) is
 * started before anything else, since it patches node's http modules, which the server and the
 * Temporal client use.
 *
 * A failure of either is reported as a failed start (./startup-failure.ts,
 * `reportStartupFailure`; or as the run's, when `started()` says so) and the process exits 1
 * (`exitAfterStartupFailure`): the ConfigError of a missing TEMPORAL_ADDRESS (`TEMPORAL_ADDRESS:
 * is required by \`npm run <role>\` (npm start runs its own)`), loadConfig's ConfigErrors, and
 * whatever `start` throws.
 */
export function runServiceProcess(
  service: ServiceProcess,
  start: (shared: ServiceStart) => Promise<void>,
): void {
  const { role, logger } = service;
  const run = async () => {
    const tracing = tracingRequested()
      ? (await import('../tracing/sdk.js')).startTracing({ serviceName: `durable-sandbox-${role}` })
      : undefined;
    const config = loadConfig();
    if (!config.temporalAddress) {
      throw new ConfigError(
        'TEMPORAL_ADDRESS',
        `is required by \`npm run ${role}\` (npm start runs its own)`,
      );
    }
    await start({ config, temporalAddress: config.temporalAddress, tracing });
  };
  run().catch((err: unknown) => {
    if (service.started?.()) logger.fatal({ err }, `${role} failed`);
    else reportStartupFailure({ role, err, logger });
    exitAfterStartupFailure();
  });
}
