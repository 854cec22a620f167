/** One structured log line per request: method, path, status, duration, tenant. */
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';

/** Logs each request when its response finishes (5xx at error level, others at info). */
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
      };
      if (res.statusCode >= 500) logger.error(entry, 'request failed');
      else logger.info(entry, 'request');
    });
    next();
  };
}
