/**
 * The one Content-Type rule of every route that reads a body, tenant and operator routes alike
 * (docs/api.md, "Routes"): a request that carries a body must say it is JSON
 * (`Content-Type: application/json`, or another `+json` type), else it answers 415
 * `unsupported_media_type` naming the header to add, and nothing is parsed or started. A request
 * without a body (a cancel with none) needs no Content-Type.
 */
import express, { type RequestHandler } from 'express';
import { ApiError } from './errors.js';

/** The header a request with a body must send, as the 415's message names it. */
export const JSON_CONTENT_TYPE_HEADER = 'Content-Type: application/json';

/**
 * Whether the request carries a body (RFC 9110, 6.4 and 8.6): a `Transfer-Encoding`, or a
 * `Content-Length` above 0. `Content-Length: 0` (what fetch sends for a POST without a body) and
 * no length at all are no body.
 */
export function carriesBody(headers: {
  'content-length'?: string | undefined;
  'transfer-encoding'?: string | undefined;
}): boolean {
  if (headers['transfer-encoding'] !== undefined) return true;
  const length = Number(headers['content-length'] ?? 0);
  return Number.isFinite(length) && length > 0;
}

/**
 * Refuses a request that carries a body whose `Content-Type` is not JSON, or that has none
 * (what `curl -d` sends without `-H 'Content-Type: application/json'` is
 * `application/x-www-form-urlencoded`), with 415 `unsupported_media_type`; `details` has
 * `content_type` (null when there was none) and `expected`.
 */
export const requireJsonContentType: RequestHandler = (req, _res, next) => {
  if (!carriesBody(req.headers) || req.is(['application/json', '+json'])) {
    next();
    return;
  }
  const sent = req.headers['content-type'];
  const what = sent === undefined ? 'no Content-Type' : `Content-Type ${sent}`;
  next(
    new ApiError(
      'unsupported_media_type',
      `the request body must be JSON: send the header ${JSON_CONTENT_TYPE_HEADER} (this request sent ${what})`,
      { content_type: sent ?? null, expected: 'application/json' },
    ),
  );
};

/**
 * The body handling of a route: {@link requireJsonContentType}, then express.json with
 * `limitBytes` (strict: an object or array). A larger body answers 400 `invalid_request`
 * (src/api/errors.ts's errorHandler names the limit).
 * @param limitBytes largest accepted body, bytes
 */
export function jsonBody(limitBytes: number): RequestHandler[] {
  // The rule above let through only JSON types and requests without a body.
  return [
    requireJsonContentType,
    express.json({ limit: limitBytes, strict: true, type: () => true }),
  ];
}
