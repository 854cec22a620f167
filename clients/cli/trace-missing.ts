/**
 * Why `durable-sandbox trace` found no span of an operation's trace, from the API's 404 to
 * `GET /debug/traces/{trace_id}` (src/api/handlers/debug-traces.ts): the route is not served at all
 * (the API is not `npm start`'s, or `npm start` exports to an OTEL backend), or it is served but
 * holds no span of that trace (`npm start` keeps the latest 500 traces in memory, so a restart
 * or 500 newer traces drop them; another tenant's trace answers the same).
 */

/** Traces `npm start` keeps (src/tracing/span-store.ts `SPAN_STORE_MAX_TRACES`; the CLI, a client, imports no service code). */
export const KEPT_TRACES = 500;

/** The 404's message when no route matched (src/api/errors.ts `notFoundHandler`: `no route GET /…`). */
const NO_ROUTE = /^no route /;

/**
 * The CLI's `no_spans` message for a 404 of the debug trace route.
 * @param traceId the operation's trace id (32 hex digits)
 * @param notFoundMessage the 404 body's `error.message`
 * @returns one sentence a person can act on
 */
export function missingTraceMessage(traceId: string, notFoundMessage: string): string {
  if (NO_ROUTE.test(notFoundMessage)) {
    return (
      `this API keeps no spans (only npm start keeps them, when no OTEL exporter is set); ` +
      `look trace ${traceId} up in your tracing backend`
    );
  }
  return (
    `this API keeps no span of trace ${traceId}: npm start keeps the latest ` +
    `${KEPT_TRACES} traces in memory, so a restart of npm start or newer traces ` +
    'dropped it (and a trace of another tenant is never shown)'
  );
}
