/**
 * `npm run worker`: the worker process for production (external Temporal, Kubernetes and
 * database). Needs TEMPORAL_ADDRESS, and KUBECONFIG unless it runs inside the cluster.
 * SIGINT/SIGTERM shut it down gracefully (`worker stopping`, then `worker stopped`): it polls
 * no more tasks, and running activities get the shutdown grace time, then see cancellation; a
 * second signal a second later forces the exit (src/process/shutdown-signals.ts). A failed start is
 * one plain line on stderr naming what failed and what to do, or a JSON line with
 * LOG_FORMAT=json (src/process/startup-failure.ts).
 */
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config/index.js';
import { createLogger } from '../process/logger.js';
import { onShutdownSignals } from '../process/shutdown-signals.js';
import {
  kubernetesStep,
  exitAfterStartupFailure,
  reportStartupFailure,
  startupStep,
  storeStep,
} from '../process/startup-failure.js';
import { createKubernetesClient } from '../kubernetes/client.js';
import { openStore } from '../store/index.js';
import { serveWorker, type ServedWorker } from './serve.js';
import { tracingRequested } from '../tracing/spans.js';

const logger = createLogger('worker');
let served: ServedWorker | undefined;

// Installed before anything starts, so a signal during start-up is not Node's default (exit
// without a word); the SDK Runtime's own handlers shut the worker down as well.
onShutdownSignals({
  stop(signal) {
    if (!served) {
      logger.info({ signal }, 'worker stopping before it started');
      process.exit(0);
    }
    logger.info(
      { signal },
      'worker stopping: draining (no new tasks; running activities get the grace time, then are ' +
        'cancelled and retried by another worker; a second signal forces)',
    );
    void served.stop();
  },
  force(signal) {
    logger.warn({ signal }, 'worker stopped at once (second signal): running activities abandoned');
  },
});

async function main(): Promise<void> {
  // Before the worker is built: it adds the tracing interceptors and sinks when the SDK runs.
  const tracing = tracingRequested()
    ? (await import('../tracing/sdk.js')).startTracing({ serviceName: 'durable-sandbox-worker' })
    : undefined;
  const config = loadConfig();
  if (!config.temporalAddress) {
    throw new ConfigError(
      'TEMPORAL_ADDRESS',
      'is required by `npm run worker` (npm start runs its own)',
    );
  }
  const kubernetes = await startupStep(kubernetesStep(config.kubeconfig), async () =>
    createKubernetesClient({
      kubeconfigPath: config.kubeconfig,
      namespace: config.sandboxNamespace,
    }),
  );
  const sqliteFile = join(config.dataDir, 'store.db');
  const store = await startupStep(storeStep(config, sqliteFile), () =>
    openStore({
      databaseUrl: config.databaseUrl,
      sqliteFile,
      webhookSecretKeys: config.webhooks.secretKeys,
    }),
  );
  served = await serveWorker({
    config,
    temporalAddress: config.temporalAddress,
    kubernetes,
    store,
    logger,
  });
  logger.info(
    {
      temporal: config.temporalAddress,
      task_queue: config.taskQueue,
      namespace: config.sandboxNamespace,
      metrics_port: config.metricsPort,
    },
    'worker started',
  );
  try {
    await served.done; // after SIGINT/SIGTERM (the SDK's handlers) and a graceful shutdown
  } finally {
    await store.close();
    await tracing?.shutdown();
    logger.info('worker stopped');
  }
}

main().catch((err: unknown) => {
  // After the start, a failure (the worker's run ends in error) is a log line like any other.
  if (served) logger.fatal({ err }, 'worker failed');
  else reportStartupFailure({ role: 'worker', err, logger });
  exitAfterStartupFailure();
});
