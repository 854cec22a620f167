/**
 * How a process that cannot start says so. A person who ran `npm run api > api.log`, or a
 * process manager without a terminal, reads one plain line on stderr: what failed and what to
 * do. A launcher that set LOG_FORMAT=json (the Dockerfile, docker-compose.yml, deploy/) gets
 * one pino `fatal` JSON line with the error and its stack instead, as every other line.
 *
 * The start-up steps that fail for reasons outside the code (the store, Temporal, a port) run
 * through {@link startupStep}, which turns their error into a ConfigError naming the variable
 * to check, so the line says where to look.
 */
import type { Logger } from 'pino';
import { ConfigError, type Config } from '../config/index.js';
import { jsonLogsRequested } from './logger.js';

/**
 * Errors whose message already names what failed and what to do (by `name`, so this module
 * needs none of their modules): the line shows the message alone, without a stack.
 */
const ACTIONABLE_ERRORS = new Set([
  'ConfigError', // src/config/index.ts and startupStep: names the variable
  'SearchAttributesMissingError', // src/worker/serve.ts: names the command that registers them
  'StoreOptionsError', // src/store/database.ts
  'MigrationError', // src/store/migrations: names the migration
]);

/** One start-up step, as {@link startupStep} reports its failure. */
export interface StartupStep {
  /** The environment variable that decides the step, e.g. `DATABASE_URL`. */
  variable: string;
  /** What failed, e.g. `cannot reach the Temporal frontend at temporal:7233`. */
  failed: string;
  /** What to do, e.g. `check TEMPORAL_ADDRESS and that the Temporal server is running`. */
  fix: string;
}

/**
 * Runs one start-up step.
 * @returns what `run` resolves with
 * @throws ConfigError `<variable>: <failed> (<cause's message>); <fix>` when `run` fails with
 *   an error that is not already a ConfigError (that one passes unchanged); the original error
 *   is its `cause`
 */
export async function startupStep<T>(step: StartupStep, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    const wrapped = new ConfigError(
      step.variable,
      `${step.failed} (${oneLine(errorMessage(err))}); ${step.fix}`,
    );
    wrapped.cause = err;
    throw wrapped;
  }
}

/** Opening the store: PostgreSQL at DATABASE_URL (its host, port and database, no password), else SQLite. */
export function storeStep(config: Pick<Config, 'databaseUrl'>, sqliteFile: string): StartupStep {
  if (!config.databaseUrl) {
    return {
      variable: 'DATA_DIR',
      failed: `cannot open the SQLite store ${sqliteFile}`,
      fix: 'check that DATA_DIR is a directory this process may write, or set DATABASE_URL',
    };
  }
  const url = new URL(config.databaseUrl);
  return {
    variable: 'DATABASE_URL',
    failed: `cannot open the PostgreSQL store at ${url.host}${url.pathname}`,
    fix: 'check DATABASE_URL and that PostgreSQL is running and accepts its user',
  };
}

/** Connecting to the Temporal frontend at `address` (TEMPORAL_ADDRESS). */
export function temporalStep(address: string): StartupStep {
  return {
    variable: 'TEMPORAL_ADDRESS',
    failed: `cannot reach the Temporal frontend at ${address}`,
    fix: 'check TEMPORAL_ADDRESS and that the Temporal server is running',
  };
}

/** Loading the cluster's credentials: the kubeconfig file at KUBECONFIG, else in-cluster. */
export function kubernetesStep(kubeconfig: string | undefined): StartupStep {
  return {
    variable: 'KUBECONFIG',
    failed: kubeconfig
      ? `cannot load the kubeconfig ${kubeconfig}`
      : 'cannot find credentials for the cluster',
    fix: 'set KUBECONFIG to a readable kubeconfig file, or run inside the cluster',
  };
}

/** Listening on `port`, which `variable` (PORT, METRICS_PORT) chose. */
export function listenStep(variable: string, port: number): StartupStep {
  return {
    variable,
    failed: `cannot listen on port ${port}`,
    fix: `stop what uses it or choose another port (${variable}=…)`,
  };
}

/**
 * The plain line for a failed start, e.g. `api failed to start: TEMPORAL_ADDRESS: is required
 * by \`npm run api\` (npm start runs its own)`. An error not known to be actionable gets its
 * message and a pointer to its stack trace (LOG_FORMAT=json logs it).
 * @param role the process: `api`, `worker`, `the stack` (npm start)
 */
export function startupFailureLine(role: string, err: unknown): string {
  const actionable = err instanceof Error && ACTIONABLE_ERRORS.has(err.name);
  const message = oneLine(errorMessage(err));
  return actionable
    ? `${role} failed to start: ${message}`
    : `${role} failed to start: ${message} (unexpected: LOG_FORMAT=json logs its stack trace)`;
}

/** Options of {@link reportStartupFailure}. */
export interface StartupFailureReport {
  /** The process, as the line names it: `api`, `worker`, `the stack` (npm start). */
  role: string;
  err: unknown;
  /** Where the JSON line goes when LOG_FORMAT=json. */
  logger: Logger;
  /** Default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Where the plain line goes (default process.stderr). */
  stderr?: Pick<NodeJS.WritableStream, 'write'>;
}

/**
 * Reports a failed start: one pino `fatal` line (error, stack) when LOG_FORMAT=json, else
 * {@link startupFailureLine} on stderr, on a terminal or not. Sets no exit code.
 */
export function reportStartupFailure(report: StartupFailureReport): void {
  const { err, logger } = report;
  if (jsonLogsRequested(report.env)) {
    const actionable = err instanceof Error && ACTIONABLE_ERRORS.has(err.name);
    logger.fatal({ err }, actionable ? err.message : `${report.role} failed to start`);
    return;
  }
  (report.stderr ?? process.stderr).write(`${startupFailureLine(report.role, err)}\n`);
}

/** How long a failed process waits for its last lines to be written before it exits, in ms. */
export const STARTUP_FAILURE_EXIT_GRACE_MS = 500;

/**
 * Ends a process whose start failed with exit code 1. What the start opened before it failed (a
 * PostgreSQL pool and its LISTEN connection, the Temporal connection, timers) would otherwise
 * keep it running, and a supervisor (systemd, Kubernetes, environments/topology/) restarts only
 * a process that exits. The exit comes after {@link STARTUP_FAILURE_EXIT_GRACE_MS}, or earlier
 * when nothing keeps the event loop alive.
 */
export function exitAfterStartupFailure(graceMs = STARTUP_FAILURE_EXIT_GRACE_MS): void {
  process.exitCode = 1;
  setTimeout(() => process.exit(1), graceMs).unref();
}

/** The message; an AggregateError's (pg's connect to several addresses) is its errors'. */
function errorMessage(err: unknown): string {
  if (err instanceof AggregateError && !err.message) {
    return err.errors.map(errorMessage).join('; ') || err.name;
  }
  if (err instanceof Error) return err.message || (err as NodeJS.ErrnoException).code || err.name;
  return String(err);
}

function oneLine(text: string): string {
  return text.replace(/\s*\n\s*/g, ' ').trim();
}
