/**
 * One structured log line per request: method, path, status, duration, tenant, request id.
 * Probes and scrapes (`/healthz`, `/readyz`, `/metrics`) are logged at debug, so a load
 * balancer or Prometheus polling every few seconds does not fill the log.
 */
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';

/** Paths polled by machines: their successful requests log at debug. */
export const PROBE_PATHS: ReadonlySet<string> = new Set(['/healthz', '/readyz', '/metrics']);

/** Logs each request when its response finishes (5xx at error, probes at debug, others info). */
export function requestLog(logger: Logger): RequestHandler {
  return (req, res, next) => {
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      const entry = {
        method: req.method,
        path: req.path,
        status: res.statusCode,
        duration_ms: Number(process.hrtime.bigint() - started) / 1e6,
        tenant: typeof res.locals.tenant === 'string' ? res.locals.tenant : undefined,
        operation_id: res.get('Operation-Id'),
        request_id: typeof res.locals.requestId === 'string' ? res.locals.requestId : undefined,
      };
      if (res.statusCode >= 500) logger.error(entry, 'request failed');
      else if (PROBE_PATHS.has(req.path)) logger.debug(entry, 'request');
      else logger.info(entry, 'request');
    });
    next();
  };
}
