/**
 * The one route the client calls that the OpenAPI document leaves out: `GET /debug/traces/{id}`,
 * served only by `npm start`'s embedded stack (src/api/handlers/debug-traces.ts; not part of the
 * API's contract). Declared here in openapi-typescript's shape so openapi-fetch types it too.
 */
import type { components } from './schema.js';

/** One span as the debug route answers it (src/tracing/span-store.ts `SpanJson`); times epoch ms. */
export interface TraceSpan {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  /** `internal`, `server`, `client`, `producer`, `consumer` (OpenTelemetry span kinds). */
  kind: string;
  start_ms: number;
  end_ms: number;
  /** `unset`, `ok` or `error`, with the error's message when there is one. */
  status: { code: string; message?: string };
  attributes: Record<string, string | number | boolean>;
}

/** The debug route as openapi-typescript would write it. */
export interface DebugPaths {
  '/debug/traces/{trace_id}': {
    parameters: { query?: never; header?: never; path?: never; cookie?: never };
    get: {
      parameters: {
        query?: never;
        header?: never;
        path: { trace_id: string };
        cookie?: never;
      };
      requestBody?: never;
      responses: {
        200: {
          headers: { [name: string]: unknown };
          content: { 'application/json': { trace_id: string; spans: TraceSpan[] } };
        };
        /** 400 for a malformed id, 404 when no span of the trace is kept (or it is not yours). */
        default: {
          headers: { [name: string]: unknown };
          content: { 'application/json': components['schemas']['Error'] };
        };
      };
    };
  };
}
