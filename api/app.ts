/**
 * The HTTP API (docs/api.md) as an Express app: routes from the route table
 * (api/routes.ts), bearer auth on every `/v1` and `/sync` route, JSON bodies up to 64 KiB, and
 * every error in the shape `{"error": {"code", "message", "details"}}`.
 */
import express, { type RequestHandler } from 'express';
import { bearerAuth } from './auth.js';
import type { AppDeps } from './deps.js';
import { createReadiness } from './readiness.js';
import { errorHandler, notFoundHandler } from './errors.js';
import { healthHandlers } from './handlers/health.js';
import { httpMetrics, metricsHandlers } from './metrics.js';
import { operationHandlers } from './handlers/operations.js';
import { sandboxHandlers } from './handlers/sandboxes.js';
import { syncCreateHandlers } from './handlers/sync-create.js';
import { templateHandlers } from './handlers/templates.js';
import { requestId } from './request-id.js';
import { requestLog } from './request-log.js';
import { ROUTES, type RouteName } from './routes.js';

export type { AppDeps } from './deps.js';

/** Largest accepted request body (64 KiB); larger ones answer 400 `invalid_request`. */
export const BODY_LIMIT_BYTES = 64 * 1024;

/**
 * Builds the app; does not listen.
 * @param appDeps a Temporal client, the store, the configuration (tokens, templates, task
 *   queue, deadlines), a logger, and optionally the Kubernetes client whose cluster `/readyz`
 *   and creates check
 */
export function createApp(appDeps: AppDeps): express.Express {
  const deps: AppDeps = { ...appDeps, readiness: appDeps.readiness ?? createReadiness(appDeps) };
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  const handlers: Record<RouteName, RequestHandler> = {
    ...healthHandlers(deps),
    ...metricsHandlers(),
    ...sandboxHandlers(deps),
    ...syncCreateHandlers(deps),
    ...operationHandlers(deps),
    ...templateHandlers(deps),
  };
  const authenticate = bearerAuth(deps.config.apiTokens);
  // Any content type is read as JSON: a create without `Content-Type` still gets validated.
  const jsonBody = express.json({ limit: BODY_LIMIT_BYTES, strict: true, type: () => true });

  app.use(requestId());
  app.use(requestLog(deps.logger));
  app.use(httpMetrics());
  for (const route of ROUTES) {
    const chain = route.auth
      ? [authenticate, jsonBody, handlers[route.name]]
      : [handlers[route.name]];
    app[route.method](route.path, ...chain);
  }
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger, '64 KiB'));
  return app;
}
