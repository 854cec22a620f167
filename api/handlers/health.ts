/**
 * Unauthenticated routes: liveness (`/healthz`), readiness (`/readyz`: Temporal and the store
 * answer) and the OpenAPI document (`/openapi.json`).
 */
import type { RequestHandler } from 'express';
import type { AppDeps } from '../deps.js';
import { openApiDocument } from '../openapi.js';

/** How long each readiness check may take, in ms. */
export const READINESS_TIMEOUT_MS = 2_000;

function withTimeout<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Handlers of the unauthenticated routes. */
export function healthHandlers(deps: AppDeps) {
  /** `GET /healthz`: 200 while the process serves requests. */
  const healthz: RequestHandler = (_req, res) => {
    res.json({ status: 'ok' });
  };

  /** `GET /readyz`: 200 when Temporal and the store answer, else 503 `unavailable`. */
  const readyz: RequestHandler = async (_req, res) => {
    const [temporal, store] = await Promise.allSettled([
      withTimeout(
        deps.temporal.workflowService.getSystemInfo({}),
        READINESS_TIMEOUT_MS,
        'temporal',
      ),
      withTimeout(deps.store.ping(), READINESS_TIMEOUT_MS, 'store'),
    ]);
    const checks = {
      temporal: temporal.status === 'fulfilled' ? 'ok' : 'unavailable',
      store: store.status === 'fulfilled' ? 'ok' : 'unavailable',
    };
    const failing = Object.entries(checks)
      .filter(([, state]) => state !== 'ok')
      .map(([name]) => name);
    if (failing.length === 0) {
      res.json({ status: 'ready', checks });
      return;
    }
    deps.logger.warn({ checks }, 'not ready');
    res.status(503).json({
      error: {
        code: 'unavailable',
        message: `not ready: ${failing.join(', ')}`,
        details: { checks },
      },
    });
  };

  /** `GET /openapi.json`: the OpenAPI 3.1 document (api/openapi.json). */
  const openapi: RequestHandler = (_req, res) => {
    res.json(openApiDocument());
  };

  return { healthz, readyz, openapi };
}
