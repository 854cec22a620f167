/**
 * The API's error vocabulary: {@link ApiError} carries a stable code, an HTTP status and a
 * message a person can act on; the handlers here turn everything else into the same body shape
 * `{"error": {"code", "message", "details"}}` without stack traces.
 */
import type { ErrorRequestHandler, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { OPERATION_ERRORS, type OperationErrorCode } from '../../contract/index.js';
import { isStoreUnavailable } from '../store/unavailable.js';

const OPERATION_ERROR_STATUS = Object.fromEntries(
  Object.entries(OPERATION_ERRORS).map(([code, row]) => [code, row.httpStatus]),
) as { [Code in OperationErrorCode]: (typeof OPERATION_ERRORS)[Code]['httpStatus'] };

/**
 * Error codes the API answers with, and their HTTP status: the API's own codes, and the
 * operation error codes with the status of contract/operation.ts's table.
 */
export const API_ERROR_STATUS = {
  unauthenticated: 401,
  not_found: 404,
  method_not_allowed: 405,
  unsupported_media_type: 415,
  already_done: 409,
  idempotency_conflict: 409,
  not_cancellable: 409,
  /** An extend of a sandbox that does not run (docs/api.md, "Lifetimes"). */
  not_running: 409,
  /**
   * A tenant asked faster than its `creates_per_second`, or holds its `waits` (src/api/tenant-admission.ts).
   * A tenant holding its sandboxes, cores or MiB gets 429 `quota_exceeded` instead.
   */
  rate_limited: 429,
  /**
   * An event feed cursor older than the oldest kept event: events after it were purged by
   * retention (docs/api.md, "Retention"). As Kubernetes answers a watch from a resourceVersion
   * too old: 410 Gone.
   */
  cursor_expired: 410,
  ...OPERATION_ERROR_STATUS,
} as const;

/** A code of {@link API_ERROR_STATUS}. */
export type ApiErrorCode = keyof typeof API_ERROR_STATUS;

/** The error body every failing request answers with. */
export interface ErrorBody {
  error: { code: string; message: string; details: Record<string, unknown> };
}

/** An error meant for the caller: its code picks the HTTP status (unless `status` overrides). */
export class ApiError extends Error {
  readonly status: number;
  /** Extra response headers, e.g. `Retry-After`. */
  readonly headers: Record<string, string>;

  constructor(
    readonly code: ApiErrorCode,
    message: string,
    readonly details: Record<string, unknown> = {},
    options: { status?: number; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'ApiError';
    this.status = options.status ?? API_ERROR_STATUS[code];
    this.headers = options.headers ?? {};
  }

  /** The response body. */
  toBody(): ErrorBody {
    return { error: { code: this.code, message: this.message, details: this.details } };
  }
}

/** Answers 404 `not_found` for any route nothing else handled. */
export const notFoundHandler: RequestHandler = (req, _res, next) => {
  next(new ApiError('not_found', `no route ${req.method} ${req.path}`));
};

/**
 * Answers 405 `method_not_allowed` with `Allow` for a path the API serves with other methods
 * (RFC 9110, 15.5.6: a 405 must list the allowed methods); OPTIONS answers 204 with `Allow`.
 * The body's message and `details.allowed` name the same methods as `Allow`, OPTIONS included.
 * @param allowed the path's methods in upper case, e.g. `['GET', 'DELETE']` (HEAD is added to
 *   GET, as Express answers it)
 */
export function methodNotAllowedHandler(allowed: readonly string[]): RequestHandler {
  // One list for the header and the body.
  const methods = [
    ...new Set([...allowed.flatMap((m) => (m === 'GET' ? ['GET', 'HEAD'] : [m])), 'OPTIONS']),
  ];
  const allow = methods.join(', ');
  return function methodNotAllowed(req, res, next) {
    res.set('Allow', allow);
    if (req.method === 'OPTIONS') {
      res.status(204).end();
      return;
    }
    next(
      new ApiError(
        'method_not_allowed',
        `${req.method} is not allowed on ${req.path}; allowed: ${allow}`,
        { allowed: methods },
      ),
    );
  };
}

/** body-parser's errors (express.json), recognised by their `type`. */
const BODY_PARSER_ERRORS: Record<string, (limit: string) => string> = {
  'entity.parse.failed': () => 'the request body is not valid JSON',
  'entity.too.large': (limit) => `the request body is larger than ${limit}`,
  'encoding.unsupported': () => 'the request body has an unsupported content encoding',
  'charset.unsupported': () => 'the request body has an unsupported charset',
  'request.aborted': () => 'the request body was aborted',
};

/**
 * The last middleware: ApiError -> its status and body; body-parser errors -> 400
 * `invalid_request`, including ones without a known `type` that carry a 4xx status (a corrupt
 * gzip or brotli body); a store whose database is unreachable (src/store/unavailable.ts) -> 503
 * `unavailable`; anything else -> 500 `internal` (logged with its stack, answered without).
 * Every 503 `unavailable` carries `Retry-After` ({@link UNAVAILABLE_RETRY_AFTER_S} s unless
 * the error set its own).
 */
export function errorHandler(logger: Logger, bodyLimit: string): ErrorRequestHandler {
  return (err: unknown, req, res, next) => {
    if (res.headersSent) {
      next(err);
      return;
    }
    let error: ApiError;
    const parserType = (err as { type?: unknown } | null)?.type;
    if (err instanceof ApiError) {
      error = err;
    } else if (typeof parserType === 'string' && parserType in BODY_PARSER_ERRORS) {
      error = new ApiError('invalid_request', BODY_PARSER_ERRORS[parserType]!(bodyLimit));
    } else if (isClientError(err)) {
      error = new ApiError(
        'invalid_request',
        'the request body could not be read (is its Content-Encoding right?)',
      );
    } else if (isStoreUnavailable(err)) {
      logger.warn({ err, method: req.method, path: req.path }, 'the store is unreachable');
      error = new ApiError('unavailable', 'the sandbox store cannot be reached; try again');
    } else {
      logger.error({ err, method: req.method, path: req.path }, 'request failed unexpectedly');
      error = new ApiError('internal', 'an internal error occurred; it has been logged');
    }
    // A 503 `unavailable` says when to try again (RFC 9110 §10.2.3), unless it said already.
    const headers =
      error.code === 'unavailable' && !('Retry-After' in error.headers)
        ? { ...error.headers, 'Retry-After': String(UNAVAILABLE_RETRY_AFTER_S) }
        : error.headers;
    res.status(error.status).set(headers).json(error.toBody());
  };
}

/** `Retry-After` (seconds) of a 503 `unavailable`: a dependency restarting takes seconds. */
export const UNAVAILABLE_RETRY_AFTER_S = 5;

/** An error raised while reading the request with a 4xx `status` (http-errors' shape). */
function isClientError(err: unknown): boolean {
  const status = (err as { status?: unknown; expose?: unknown } | null)?.status;
  return typeof status === 'number' && status >= 400 && status < 500;
}
