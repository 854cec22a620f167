/**
 * Unauthenticated routes: liveness (`/healthz`), readiness (`/readyz`: Temporal, the store, the
 * namespace's search attributes and the cluster; api/readiness.ts) and the OpenAPI document (`/openapi.json`).
 */
import type { RequestHandler } from 'express';
import type { AppDeps } from '../deps.js';
import { openApiDocument } from '../openapi.js';
import { createReadiness } from '../readiness.js';

/** Handlers of the unauthenticated routes. */
export function healthHandlers(deps: AppDeps) {
  /** `GET /healthz`: 200 while the process serves requests. */
  const healthz: RequestHandler = (_req, res) => {
    res.json({ status: 'ok' });
  };

  /**
   * `GET /readyz`: 200 when Temporal and the store answer, the namespace has the search
   * attributes and the cluster can be used (api/readiness.ts); else 503 `unavailable` whose
   * message names what is wrong.
   */
  const readyz: RequestHandler = async (_req, res) => {
    const report = await (deps.readiness ?? createReadiness(deps)).report();
    if (report.ready) {
      if (report.warnings) deps.logger.warn({ warnings: report.warnings }, 'ready, degraded');
      res.json({
        status: 'ready',
        checks: report.checks,
        ...(report.warnings ? { warnings: report.warnings } : {}),
      });
      return;
    }
    deps.logger.warn({ checks: report.checks }, 'not ready');
    res.status(503).json({
      error: {
        code: 'unavailable',
        message: `not ready: ${report.problem}`,
        details: { checks: report.checks },
      },
    });
  };

  /** `GET /openapi.json`: the OpenAPI 3.1 document (api/openapi.json). */
  const openapi: RequestHandler = (_req, res) => {
    res.json(openApiDocument());
  };

  return { healthz, readyz, openapi };
}
