/**
 * Serves the create worker as a process (the outer of the worker's three layers: build, run,
 * serve): the SDK Runtime (logs to pino, worker metrics to an
 * internal Prometheus exporter), the worker's `/metrics` server, the connection, the orphan-pod
 * sweeper (src/worker/orphan-sweeper.ts), and the worker itself (`runSandboxWorker`,
 * src/worker/sandbox-worker.ts, as the tests run it). Shared by `npm run worker` (src/worker/main.ts) and the embedded stack (tools/start.ts).
 */
import type { Server } from 'node:http';
import { NativeConnection, type Worker } from '@temporalio/worker';
import type { Logger } from 'pino';
import { workerRegistry } from '../activities/metrics.js';
import { announceLostEvent } from '../activities/webhook-delivery.js';
import type { SandboxInformersOptions } from '../kubernetes/sandbox-informers.js';
import { collectProcessMetrics } from '../process/process-metrics.js';
import { freePort } from '../process/free-port.js';
import { listenStep, startupStep, temporalStep } from '../process/startup-failure.js';
import type { Config } from '../config/index.js';
import {
  nativeConnectionOptions,
  temporalConnectionWarnings,
  watchCertificateFiles,
  type TemporalCredentials,
} from '../config/temporal-connection.js';
import type { KubernetesClient } from '../kubernetes/client.js';
import type { Store } from '../store/index.js';
import { startMetricsServer } from './metrics-server.js';
import { checkSearchAttributes } from '../temporal/search-attributes.js';
import { isWorkflowOpen, listRunningWorkflowIds } from '../temporal/workflow-status.js';
import { startOrphanSweeper } from './orphan-sweeper.js';
import { installRuntime } from './runtime.js';
import { runSandboxWorker } from './sandbox-worker.js';

/** Thrown by {@link serveWorker} when the Temporal namespace lacks search attributes. */
export class SearchAttributesMissingError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SearchAttributesMissingError';
  }
}

/** Options of {@link serveWorker}. */
export interface ServeWorkerOptions {
  config: Config;
  /** `host:port` of the Temporal frontend. */
  temporalAddress: string;
  /**
   * TLS, client certificate and API key of that frontend (default: config.temporalCredentials
   * when `temporalAddress` is config.temporalAddress, else plaintext: npm start's own server).
   */
  temporalCredentials?: TemporalCredentials;
  /** How often certificate files are checked for a rotation, in ms (tests; default 60 s). */
  certificateRefreshIntervalMs?: number;
  kubernetes: KubernetesClient;
  store: Store;
  logger: Logger;
  /** Port and bind address of the worker's `/metrics` (default: config.metricsPort, 0.0.0.0). */
  metricsPort?: number;
  metricsHost?: string;
  /**
   * Register the process metrics (`process_*`, `nodejs_*`) on the worker's endpoint (default
   * true); the embedded stack gives them to the API's endpoint instead.
   */
  processMetrics?: boolean;
  /** Why a waited-for pod that no longer exists is gone when nothing deleted it (SandboxInformers' option). */
  explainMissingPod?: SandboxInformersOptions['explainMissingPod'];
}

/** A running worker. */
export interface ServedWorker {
  worker: Worker;
  /** Resolves when the worker has stopped (after SIGINT/SIGTERM or `stop()`). */
  done: Promise<void>;
  metricsPort: number;
  /**
   * The worker's connection. A client built on it (same process) can start workflows eagerly:
   * the first workflow task comes back in the start's answer (Temporal, "Eager Workflow Start").
   * Closed when the worker stops.
   */
  connection: NativeConnection;
  /** Shuts the worker down gracefully, then closes the connection and the metrics server. */
  stop(): Promise<void>;
}

/**
 * Installs the Runtime, starts the metrics server and runs the worker in the background.
 * @throws when the Runtime is already installed or the workflow bundle fails to build
 * @throws ConfigError naming METRICS_PORT when its port is taken, TEMPORAL_ADDRESS when that
 *   frontend is unreachable (src/process/startup-failure.ts)
 * @throws SearchAttributesMissingError naming the missing search attributes and the command
 *   that registers them
 */
export async function serveWorker(options: ServeWorkerOptions): Promise<ServedWorker> {
  const { config } = options;
  const sdkMetricsPort = await freePort();
  installRuntime(options.logger, { prometheusBindAddress: `127.0.0.1:${sdkMetricsPort}` });
  const metricsPort = options.metricsPort ?? config.metricsPort;
  if (options.processMetrics !== false) collectProcessMetrics(workerRegistry);
  const metricsServer: Server = await startupStep(listenStep('METRICS_PORT', metricsPort), () =>
    startMetricsServer({
      port: metricsPort,
      host: options.metricsHost,
      sdkMetricsUrl: `http://127.0.0.1:${sdkMetricsPort}/metrics`,
    }),
  );
  const credentials =
    options.temporalCredentials ??
    (options.temporalAddress === config.temporalAddress ? config.temporalCredentials : {});
  for (const warning of temporalConnectionWarnings(options.temporalAddress, credentials)) {
    options.logger.warn({ temporal: options.temporalAddress }, warning);
  }
  const connect = () =>
    NativeConnection.connect(nativeConnectionOptions(options.temporalAddress, credentials));
  // TEMPORAL_ADDRESS named only when it chose the address (not npm start's own dev server).
  const connection = await (
    options.temporalAddress === config.temporalAddress
      ? startupStep(temporalStep(options.temporalAddress), connect)
      : connect()
  ).catch(async (err: unknown) => {
    await new Promise((resolve) => metricsServer.close(resolve));
    throw err;
  });
  // Refuse to serve a namespace whose search attributes are missing: an upsert of a missing
  // one fails every workflow task.
  const attributes = await checkSearchAttributes(
    connection,
    config.temporalNamespace,
    options.temporalAddress,
  ).catch(async (err: unknown) => {
    await connection.close();
    throw err;
  });
  if (attributes.problem) {
    await connection.close();
    await new Promise((resolve) => metricsServer.close(resolve));
    throw new SearchAttributesMissingError(attributes.problem);
  }
  // The informers, the decider and the worker, as every worker is built (src/worker/sandbox-worker.ts).
  const {
    worker,
    client,
    done: stopped,
  } = await runSandboxWorker({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    kubernetes: options.kubernetes,
    store: options.store,
    logger: options.logger,
    watchRetryDelayMs: config.watchRetryDelayMs,
    watchTimeoutSeconds: config.watchTimeoutSeconds,
    explainMissingPod: options.explainMissingPod,
    templates: config.templates,
    webhooks: config.webhooks,
    tenantLimits: config.tenantLimits,
    retention: config.retention,
    worker: {
      maxCachedWorkflows: config.maxCachedWorkflows,
      // The `sandbox` Nexus service, when NEXUS_TENANTS maps a calling namespace (docs/nexus.md).
      ...(config.nexusTenants.size > 0
        ? {
            nexus: {
              store: options.store,
              config,
              logger: options.logger,
              tenants: config.nexusTenants,
            },
          }
        : {}),
    },
  });
  const stopSweeper =
    config.orphanSweepIntervalMs > 0
      ? startOrphanSweeper({
          kubernetes: options.kubernetes,
          store: options.store,
          logger: options.logger,
          templates: config.templates,
          intervalMs: config.orphanSweepIntervalMs,
          isWorkflowOpen: (workflowId) =>
            isWorkflowOpen(connection, config.temporalNamespace, workflowId),
          listRunningCreates: () => listRunningWorkflowIds(client, 'createSandbox'),
          announceLost: (sandbox) =>
            announceLostEvent(
              { client, taskQueue: config.taskQueue, store: options.store },
              sandbox,
            ),
        })
      : () => undefined;
  // The worker's connection takes its certificate at connect only: when a file rotates, the
  // worker drains and stops, and its supervisor starts it again with the new files
  // (docs/security.md, "Connecting to Temporal").
  const stopWatching = watchCertificateFiles(
    credentials,
    (variables) => {
      options.logger.warn(
        { temporal: options.temporalAddress, rotated: variables },
        'the Temporal client certificate files changed: the worker drains and stops to ' +
          'connect again with them (its supervisor starts it again)',
      );
      if (worker.getState() === 'RUNNING') worker.shutdown();
    },
    options.certificateRefreshIntervalMs,
  );
  const done = stopped.finally(async () => {
    stopWatching();
    stopSweeper();
    await connection.close();
    await new Promise((resolve) => metricsServer.close(resolve));
  });
  return {
    worker,
    done,
    metricsPort,
    connection,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
