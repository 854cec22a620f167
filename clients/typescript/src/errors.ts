/**
 * The errors the client throws: {@link DurableSandboxError} for an error answer of the API (its
 * body `{"error": {"code", "message", "details"}}`) or no usable answer at all, and
 * {@link RequestAbortedError} when the caller's signal stopped the call.
 */
import type { ErrorCode } from './types.js';

/** An error answer of the API, or no answer (status 0). */
export class DurableSandboxError extends Error {
  /**
   * @param code the API's code, e.g. `invalid_request`; `unavailable` when the API could not be
   *   reached (status 0) or a proxy answered 502/503/504 without the API's body, `internal` for
   *   any other answer without it
   * @param status the HTTP status; 0 when no answer came
   * @param details the body's `details` (e.g. `operation_id` of a failed synchronous create)
   * @param requestId the answer's `X-Request-Id`, the key to the API's logs of the request
   * @param retryAfterS the answer's `Retry-After` in seconds, when it has one
   */
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly status: number,
    readonly details: Record<string, unknown> = {},
    readonly requestId?: string,
    readonly retryAfterS?: number,
  ) {
    super(message);
    this.name = 'DurableSandboxError';
  }
}

/** Thrown once the caller's signal (the client's or the call's) has aborted; the reason is kept. */
export class RequestAbortedError extends Error {
  constructor(readonly reason: unknown) {
    super('the request was aborted');
    this.name = 'RequestAbortedError';
  }
}

/** Every code, once: the compiler checks the table against the document's union. */
const ERROR_CODES: { readonly [Code in ErrorCode]: true } = {
  invalid_request: true,
  unauthenticated: true,
  not_found: true,
  unsupported_media_type: true,
  method_not_allowed: true,
  already_done: true,
  idempotency_conflict: true,
  not_cancellable: true,
  not_running: true,
  internal: true,
  pod_failed: true,
  cancelled: true,
  unavailable: true,
  quota_exceeded: true,
  pod_never_ready: true,
  no_node_available: true,
  rate_limited: true,
  cursor_expired: true,
};

/** Whether `code` is one of the document's error codes. */
export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(ERROR_CODES, code);
}

/**
 * The error of a non-2xx answer.
 * @param body the answer's body, parsed when it was JSON, else its text
 * @param what the request, e.g. `GET /v1/sandboxes`, named when the body says nothing
 */
export function errorOfAnswer(
  response: Response,
  body: unknown,
  what: string,
): DurableSandboxError {
  const error = (body as { error?: { code?: unknown; message?: unknown; details?: unknown } })
    ?.error;
  const retryAfter = Number(response.headers.get('retry-after') ?? NaN);
  const requestId = response.headers.get('x-request-id') ?? undefined;
  const retryAfterS = Number.isFinite(retryAfter) ? retryAfter : undefined;
  if (isErrorCode(error?.code)) {
    return new DurableSandboxError(
      error.code,
      typeof error.message === 'string' ? error.message : `${what} answered ${response.status}`,
      response.status,
      typeof error.details === 'object' && error.details !== null
        ? (error.details as Record<string, unknown>)
        : {},
      requestId,
      retryAfterS,
    );
  }
  // Not the API's body (a proxy in between, or a code newer than this client knows).
  const code = [502, 503, 504].includes(response.status) ? 'unavailable' : 'internal';
  const message =
    typeof error?.code === 'string' && typeof error.message === 'string'
      ? `${error.code}: ${error.message}`
      : `${what} answered ${response.status} without the API's error body`;
  return new DurableSandboxError(code, message, response.status, {}, requestId, retryAfterS);
}
