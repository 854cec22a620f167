/**
 * `npm run worker`: the worker process for production (external Temporal, Kubernetes and
 * database). Needs TEMPORAL_ADDRESS, and KUBECONFIG unless it runs inside the cluster.
 * SIGINT/SIGTERM shut it down gracefully: running activities see cancellation first.
 */
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../config/index.js';
import { createLogger } from '../config/logger.js';
import { createKubernetesClient } from '../kubernetes/client.js';
import { openStore } from '../store/index.js';
import { SearchAttributesMissingError, serveWorker } from './serve.js';
import { tracingRequested } from '../tracing/spans.js';

const logger = createLogger('worker');

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
  const kubernetes = createKubernetesClient({
    kubeconfigPath: config.kubeconfig,
    namespace: config.sandboxNamespace,
  });
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    sqliteFile: join(config.dataDir, 'store.db'),
  });
  const served = await serveWorker({
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
  logger.fatal(
    { err },
    err instanceof ConfigError || err instanceof SearchAttributesMissingError
      ? err.message
      : 'worker failed',
  );
  process.exitCode = 1;
});
