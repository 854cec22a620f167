/**
 * `npm run api`: the API process for production (an external Temporal frontend and database).
 * Needs TEMPORAL_ADDRESS, and API_TOKENS or OIDC_ISSUER (or ALLOW_DEV_TOKEN=true, for
 * development: the dev token); listens on PORT; opens the store from DATABASE_URL or
 * `<DATA_DIR>/store.db`. SIGINT/SIGTERM stop accepting connections, let running requests end
 * and close the connections (`api stopping`, then `api stopped`); a second signal a second later
 * forces the exit (src/process/shutdown-signals.ts). A failed start is one plain line on stderr
 * naming what failed and what to do, or a JSON line with LOG_FORMAT=json
 * (src/process/service-process.ts, src/process/startup-failure.ts).
 */
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { ConfigError, DEV_TOKEN } from '../config/index.js';
import { createLogger } from '../process/logger.js';
import { runServiceProcess, type ServiceStart } from '../process/service-process.js';
import { onShutdownSignals } from '../process/shutdown-signals.js';
import { listenStep, startupStep, storeStep, temporalStep } from '../process/startup-failure.js';
import { createKubernetesClient } from '../kubernetes/client.js';
import { openStore } from '../store/index.js';
import { checkSearchAttributes } from '../temporal/search-attributes.js';
import { createApp } from './app.js';
import { listenApi } from './http-server.js';
import { apiRegistry } from './metrics.js';
import { collectProcessMetrics } from '../process/process-metrics.js';
import { tracingClientInterceptors } from '../tracing/temporal.js';
import { requireApiCredentials } from '../config/api-credentials.js';
import {
  clientConnectionOptions,
  temporalConnectionWarnings,
} from '../config/temporal-connection.js';

const logger = createLogger('api');

async function main({ config, temporalAddress, tracing }: ServiceStart): Promise<void> {
  requireApiCredentials(config);
  const sqliteFile = join(config.dataDir, 'store.db');
  const store = await startupStep(storeStep(config, sqliteFile), () =>
    openStore({
      databaseUrl: config.databaseUrl,
      sqliteFile,
      webhookSecretKeys: config.webhooks.secretKeys,
    }),
  );
  for (const warning of temporalConnectionWarnings(temporalAddress, config.temporalCredentials)) {
    logger.warn({ temporal: temporalAddress }, warning);
  }
  // Certificate files given by path are read again while it runs (src/config/temporal-connection.ts).
  const connection = await startupStep(temporalStep(temporalAddress), () =>
    Connection.connect(clientConnectionOptions(temporalAddress, config.temporalCredentials)),
  );
  const temporal = new Client({
    connection,
    namespace: config.temporalNamespace,
    interceptors: { workflow: tracingClientInterceptors(tracing) },
  });
  // Refuse to serve a namespace whose search attributes are missing: every create would fail.
  const attributes = await checkSearchAttributes(
    connection,
    config.temporalNamespace,
    temporalAddress,
  );
  if (attributes.problem) throw new ConfigError('TEMPORAL_NAMESPACE', attributes.problem);
  // The cluster /readyz and creates check (src/api/readiness.ts): KUBECONFIG, or in the cluster.
  const kubernetes =
    config.kubeconfig || process.env.KUBERNETES_SERVICE_HOST
      ? createKubernetesClient({
          kubeconfigPath: config.kubeconfig,
          namespace: config.sandboxNamespace,
        })
      : undefined;
  if (!kubernetes) {
    logger.warn('KUBECONFIG is unset and not in a cluster: /readyz does not check the cluster');
  }
  collectProcessMetrics(apiRegistry);
  const app = createApp({ temporal, store, config, logger, kubernetes });

  const server = await startupStep(listenStep('PORT', config.port), () =>
    listenApi(app, { port: config.port, keepAliveTimeoutMs: config.httpKeepAliveTimeoutMs }),
  );
  logger.info({ port: config.port, temporal: temporalAddress }, 'api listening');
  if (config.devToken)
    logger.warn(
      { token: DEV_TOKEN },
      'ALLOW_DEV_TOKEN=true and API_TOKENS is unset: using the dev token',
    );
  if (config.oidc) {
    logger.info(
      { issuer: config.oidc.issuer, jwks_url: config.oidc.jwksUrl.href },
      'accepting JWTs of the identity provider',
    );
  }

  onShutdownSignals({
    stop(signal) {
      logger.info(
        { signal },
        'api stopping: no new connections, running requests end (a second signal forces)',
      );
      server.close(() => {
        void Promise.allSettled([connection.close(), store.close(), tracing?.shutdown()]).then(() =>
          logger.info('api stopped'),
        );
      });
      server.closeIdleConnections();
    },
    force(signal) {
      logger.warn({ signal }, 'api stopped at once (second signal): running requests were cut');
    },
  });
}

runServiceProcess({ role: 'api', logger }, main);
