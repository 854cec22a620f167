/**
 * `npm run worker`: the worker process for production (external Temporal, Kubernetes and
 * database). Needs TEMPORAL_ADDRESS, and KUBECONFIG unless it runs inside the cluster.
 * SIGINT/SIGTERM shut it down gracefully: running activities see cancellation first.
 */
import { join } from 'node:path';
import { NativeConnection } from '@temporalio/worker';
import { ConfigError, loadConfig } from '../config/index.js';
import { createLogger } from '../config/logger.js';
import { createKubernetesClient } from '../kubernetes/client.js';
import { openStore } from '../store/index.js';
import { createMetrics } from '../activities/metrics.js';
import { freePort } from '../config/free-port.js';
import { startMetricsServer } from './metrics-server.js';
import { installRuntime } from './runtime.js';
import { createSandboxWorker } from './worker.js';

const logger = createLogger('worker');

async function main(): Promise<void> {
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
  const sdkMetricsPort = await freePort();
  installRuntime(logger, { prometheusBindAddress: `127.0.0.1:${sdkMetricsPort}` });
  const metricsServer = await startMetricsServer({
    port: config.metricsPort,
    sdkMetricsUrl: `http://127.0.0.1:${sdkMetricsPort}/metrics`,
  });
  const connection = await NativeConnection.connect({ address: config.temporalAddress });
  const worker = await createSandboxWorker({
    connection,
    namespace: config.temporalNamespace,
    taskQueue: config.taskQueue,
    deps: {
      kubernetes,
      store,
      logger,
      watchRetryDelayMs: config.watchRetryDelayMs,
      metrics: createMetrics(),
    },
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
    await worker.run(); // returns after SIGINT/SIGTERM and a graceful shutdown
  } finally {
    metricsServer.close();
    await connection.close();
    await store.close();
    logger.info('worker stopped');
  }
}

main().catch((err: unknown) => {
  logger.fatal({ err }, err instanceof ConfigError ? err.message : 'worker failed');
  process.exitCode = 1;
});
