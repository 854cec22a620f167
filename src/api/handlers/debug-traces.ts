/**
 * `GET /debug/traces/{trace_id}`: the spans of one trace from the embedded stack's span store
 * (src/tracing/span-store.ts), for `npx durable-sandbox trace op_…`. Mounted only when the app is
 * given a span store (`npm start` without an OTEL exporter); it is not part of the API's
 * contract (no OpenAPI entry), and production processes never serve it. A tenant sees only
 * the traces of its own requests; another tenant's trace answers 404 like one not kept.
 */
import type { RequestHandler } from 'express';
import type { SpanStore } from '../../tracing/span-store.js';
import { tenantOf } from '../auth.js';
import { ApiError } from '../errors.js';

/** Path of the route (Express syntax). */
export const DEBUG_TRACE_PATH = '/debug/traces/:traceId';

/** A W3C trace id: 32 lowercase hex digits. */
const TRACE_ID = /^[0-9a-f]{32}$/;

/**
 * The handler: 200 `{trace_id, spans}` (spans by start time, src/tracing/span-store.ts `SpanJson`).
 * @throws ApiError `invalid_request` (400) for a malformed trace id, `not_found` (404) when the
 *   store holds no span of the trace (it keeps the latest traces only) or the trace is not the
 *   authenticated tenant's
 */
export function debugTraceHandler(spanStore: SpanStore): RequestHandler {
  return (req, res) => {
    const traceId = String(req.params.traceId);
    if (!TRACE_ID.test(traceId)) {
      throw new ApiError('invalid_request', 'trace_id must be 32 lowercase hex digits');
    }
    const spans = spanStore.trace(traceId, tenantOf(res));
    if (spans.length === 0) {
      throw new ApiError('not_found', `no span of trace ${traceId} is kept here`);
    }
    res.json({ trace_id: traceId, spans });
  };
}
