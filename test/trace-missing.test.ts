/**
 * `durable-sandbox trace`'s message when the API has no span of the trace, from the API's own
 * 404 messages: the route not served (not npm start's API) or served without that trace (npm
 * start restarted, or the trace dropped for newer ones).
 */
import type { Request, Response } from 'express';
import { describe, expect, it } from 'vitest';
import { notFoundHandler } from '../src/api/errors.js';
import { debugTraceHandler } from '../src/api/handlers/debug-traces.js';
import { KEPT_TRACES, missingTraceMessage } from '../clients/cli/trace-missing.js';
import { SPAN_STORE_MAX_TRACES, SpanStore } from '../src/tracing/span-store.js';

const TRACE_ID = '4bf92f3577b34da6a3ce929d0e0e4736';

/** The message of the error a handler throws or passes on. */
function messageOf(run: (next: (err: unknown) => void) => void): string {
  let caught: unknown;
  try {
    run((err) => (caught = err));
  } catch (err) {
    caught = err;
  }
  return (caught as Error).message;
}

const noRoute = messageOf((next) =>
  notFoundHandler(
    { method: 'GET', path: `/debug/traces/${TRACE_ID}` } as Request,
    {} as Response,
    next,
  ),
);
const notKept = messageOf((next) =>
  debugTraceHandler(new SpanStore())(
    { params: { traceId: TRACE_ID } } as unknown as Request,
    { locals: { tenant: 'tenant-a' } } as unknown as Response,
    next,
  ),
);

describe('the trace command without spans', () => {
  it.each([
    {
      what: 'an API that serves no traces',
      message: noRoute,
      says: /^this API keeps no spans \(only npm start keeps them, when no OTEL exporter is set\)/,
    },
    {
      what: 'npm start without that trace (restarted, or newer traces)',
      message: notKept,
      says: /^this API keeps no span of trace 4bf9.*a restart of npm start or newer traces dropped it/,
    },
  ])('names why for $what', ({ message, says }) => {
    expect(missingTraceMessage(TRACE_ID, message)).toMatch(says);
  });

  it("never tells npm start's own API that only npm start keeps spans", () => {
    expect(missingTraceMessage(TRACE_ID, notKept)).not.toMatch(/only npm start/);
  });

  it('names as many kept traces as the span store keeps', () => {
    expect(KEPT_TRACES).toBe(SPAN_STORE_MAX_TRACES);
  });
});
