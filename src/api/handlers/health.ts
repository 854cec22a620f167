/**
 * Unauthenticated routes: liveness (`/healthz`), readiness (`/readyz`: Temporal, the store, the
 * namespace's search attributes and the cluster; src/api/readiness.ts) and the OpenAPI document (`/openapi.json`).
 * `/readyz` tells an unauthenticated caller (a load balancer, a kubelet probe, anyone who
 * reaches the port) only whether the API is ready; what is wrong (apiserver URLs, store
 * errors) goes to the server's log, and to a caller with a valid bearer token.
 */
import type { RequestHandler, Response } from 'express';
import type { AppDeps } from '../deps.js';
import { openApiDocument } from '../openapi.js';
import { createReadiness } from '../readiness.js';

/**
 * Handlers of the unauthenticated routes.
 * @param authenticate the API's bearer authentication (src/api/auth.ts): `/readyz` runs it when the
 *   request carries an `Authorization` header, and answers the details only once it passed
 */
export function healthHandlers(deps: AppDeps, authenticate: RequestHandler) {
  /** `GET /healthz`: 200 while the process serves requests. */
  const healthz: RequestHandler = (_req, res) => {
    res.json({ status: 'ok' });
  };

  /**
   * `GET /readyz`: 200 when Temporal and the store answer, the namespace has the search
   * attributes and the cluster can be used (src/api/readiness.ts); else 503 `unavailable`. Without
   * a token: `{"status":"ready"}` or the message `not ready`, nothing more. With a valid token:
   * the checks, warnings, and a message naming what is wrong. A token that is refused answers
   * 401 as on every other route.
   */
  const readyz: RequestHandler = (req, res, next) => {
    if (req.get('authorization') === undefined) {
      answerReadiness(res, false).catch(next);
      return;
    }
    authenticate(req, res, (err?: unknown) => {
      if (err) next(err);
      else answerReadiness(res, true).catch(next);
    });
  };

  async function answerReadiness(res: Response, detailed: boolean): Promise<void> {
    const report = await (deps.readiness ?? createReadiness(deps)).report();
    if (report.ready) {
      if (report.warnings) deps.logger.warn({ warnings: report.warnings }, 'ready, degraded');
      res.json(
        detailed
          ? {
              status: 'ready',
              checks: report.checks,
              ...(report.warnings ? { warnings: report.warnings } : {}),
            }
          : { status: 'ready' },
      );
      return;
    }
    deps.logger.warn({ checks: report.checks }, 'not ready');
    res.status(503).json({
      error: detailed
        ? {
            code: 'unavailable',
            message: `not ready: ${report.problem}`,
            details: { checks: report.checks },
          }
        : { code: 'unavailable', message: NOT_READY_MESSAGE },
    });
  }

  /** `GET /openapi.json`: the OpenAPI 3.1 document (src/api/openapi.json). */
  const openapi: RequestHandler = (_req, res) => {
    res.json(openApiDocument());
  };

  return { healthz, readyz, openapi };
}

/** The whole 503 message of `/readyz` to a caller without a token (the reason is in the log). */
export const NOT_READY_MESSAGE =
  'not ready (the reason is in the server log, or in /readyz with a valid bearer token)';
