/**
 * The HTTP API (docs/api.md) as an Express app: routes from the route table
 * (src/api/routes.ts), bearer auth (static tokens and, with OIDC on, JWTs: src/api/auth.ts) on every `/v1`
 * and `/sync` route, JSON bodies up to 64 KiB, and every error in the shape `{"error": {"code", "message", "details"}}`.
 */
import express, { type RequestHandler } from 'express';
import { bearerAuth, tenantOf } from './auth.js';
import type { AppDeps } from './deps.js';
import { createReadiness } from './readiness.js';
import { errorHandler, methodNotAllowedHandler, notFoundHandler } from './errors.js';
import { jsonBody } from './json-body.js';
import { healthHandlers } from './handlers/health.js';
import { httpMetrics, metricsHandlers } from './metrics.js';
import { operationHandlers } from './handlers/operation-routes.js';
import { sandboxHandlers } from './handlers/sandboxes.js';
import { syncCreateHandlers } from './handlers/sync-create.js';
import { templateHandlers } from './handlers/templates.js';
import { DEBUG_TRACE_PATH, debugTraceHandler } from './handlers/debug-traces.js';
import { ADMIN_PREFIX, adminRouter } from './handlers/admin-floors.js';
import { requestId } from './request-id.js';
import { createTenantAdmission } from './tenant-admission.js';
import { quotaHandlers } from './handlers/quota.js';
import { webhookHandlers } from './handlers/webhook-routes.js';
import { eventHandlers } from './handlers/events.js';
import { requestLog } from './request-log.js';
import { ROUTES, pathsInMatchOrder, type RouteName } from './routes.js';
import { markRequestTenant, nameRequestSpan } from '../tracing/spans.js';

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
  const deps: AppDeps = {
    ...appDeps,
    readiness: appDeps.readiness ?? createReadiness(appDeps),
    admission: appDeps.admission ?? createTenantAdmission(appDeps.config),
  };
  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');

  const authenticate = bearerAuth({
    tokens: deps.config.apiTokens,
    oidc: deps.config.oidc,
    logger: deps.logger,
  });
  const handlers: Record<RouteName, RequestHandler> = {
    ...healthHandlers(deps, authenticate),
    ...metricsHandlers(),
    ...sandboxHandlers(deps),
    ...syncCreateHandlers(deps),
    ...operationHandlers(deps),
    ...templateHandlers(deps),
    ...quotaHandlers(deps),
    ...webhookHandlers(deps),
    ...eventHandlers(deps),
  };
  // The request's span names its tenant: the embedded stack shows a trace to that tenant only.
  const tenantSpan: RequestHandler = (_req, res, next) => {
    markRequestTenant(tenantOf(res));
    next();
  };
  // A body that does not say it is JSON is refused with 415 first (src/api/json-body.ts).
  const body = jsonBody(BODY_LIMIT_BYTES);

  app.use(requestId());
  app.use(requestLog(deps.logger));
  app.use(httpMetrics());
  // Each path's routes, then its 405 with `Allow`; custom-method paths (AIP-136,
  // `/v1/sandboxes/:id\\:extend`) first, or `/v1/sandboxes/:id` would take `sbx_…:extend` as an id.
  for (const path of pathsInMatchOrder(ROUTES)) {
    const routes = ROUTES.filter((route) => route.path === path);
    for (const route of routes) {
      const method = route.method.toUpperCase();
      const named: RequestHandler = (_req, _res, next) => {
        nameRequestSpan(method, route.path);
        next();
      };
      const chain = route.auth
        ? [named, authenticate, tenantSpan, ...body, handlers[route.name]]
        : [named, handlers[route.name]];
      app[route.method](route.path, ...chain);
    }
    // A served path asked with another method: 405 with `Allow`, not 404.
    app.all(path, methodNotAllowedHandler(routes.map((route) => route.method.toUpperCase())));
  }
  if (deps.spanStore)
    app.get(DEBUG_TRACE_PATH, authenticate, tenantSpan, debugTraceHandler(deps.spanStore));
  // Operator routes (docs/api.md, "Operator routes"): only with ADMIN_TOKENS, never a tenant's token.
  if (deps.config.adminTokens.size > 0) app.use(ADMIN_PREFIX, adminRouter(deps));
  app.use(notFoundHandler);
  app.use(errorHandler(deps.logger, '64 KiB'));
  return app;
}
