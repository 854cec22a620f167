/**
 * `npm run worker`: the worker process for production (external Temporal, Kubernetes and
 * database). Needs TEMPORAL_ADDRESS, and KUBECONFIG unless it runs inside the cluster.
 * SIGINT/SIGTERM shut it down gracefully (`worker stopping`, then `worker stopped`): it polls
 * no more tasks, and running activities get the shutdown grace time, then see cancellation; a
 * second signal a second later forces the exit (src/process/shutdown-signals.ts). A failed start is
 * one plain line on stderr naming what failed and what to do, or a JSON line with
 * LOG_FORMAT=json (src/process/service-process.ts, src/process/startup-failure.ts).
 */
import { join } from 'node:path';
import { createLogger } from '../process/logger.js';
import { runServiceProcess, type ServiceStart } from '../process/service-process.js';
import { onShutdownSignals } from '../process/shutdown-signals.js';
import { kubernetesStep, startupStep, storeStep } from '../process/startup-failure.js';
import { createKubernetesClient } from '../kubernetes/client.js';
import { openStore } from '../store/index.js';
import { serveWorker, type ServedWorker } from './serve.js';

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

async function main({ config, temporalAddress, tracing }: ServiceStart): Promise<void> {
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
    temporalAddress,
    kubernetes,
    store,
    logger,
  });
  logger.info(
    {
      temporal: temporalAddress,
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

// After the start, a failure (the worker's run ends in error) is a log line like any other.
runServiceProcess({ role: 'worker', logger, started: () => served !== undefined }, main);
