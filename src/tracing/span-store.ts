/**
 * The embedded stack's span store (docs/observability.md): an OpenTelemetry span exporter that
 * keeps the spans of the latest traces in memory, so `npm start` shows a create's trace without
 * a tracing backend (`GET /debug/traces/{trace_id}`, `npx durable-sandbox trace op_…`).
 * Bounded: once it holds {@link SPAN_STORE_MAX_TRACES} traces, the oldest trace is dropped.
 * A trace is shown only to the tenant whose request made it: the request's span names the
 * tenant (`durable_sandbox.tenant_id`, src/tracing/spans.ts), and a trace in which no span, or
 * spans of two tenants (a request that joined another's trace with a forged `traceparent`),
 * name a tenant is shown to nobody.
 */
import { ExportResultCode, hrTimeToMilliseconds, type ExportResult } from '@opentelemetry/core';
import type { ReadableSpan, SpanExporter } from '@opentelemetry/sdk-trace-base';
import { TENANT_ID_ATTRIBUTE } from './spans.js';

/** Traces the store keeps (the latest; each create is one). */
export const SPAN_STORE_MAX_TRACES = 500;
/** Spans one trace keeps; later ones are dropped (a create makes about 20). */
export const SPAN_STORE_MAX_SPANS_PER_TRACE = 1_000;

/** One span as `GET /debug/traces/{trace_id}` shows it. Times are epoch ms (fractional). */
export interface SpanJson {
  trace_id: string;
  span_id: string;
  parent_span_id: string | null;
  name: string;
  /** `internal`, `server`, `client`, `producer`, `consumer` (OpenTelemetry span kinds). */
  kind: string;
  start_ms: number;
  end_ms: number;
  /** `unset`, `ok` or `error`, with the error's message when there is one. */
  status: { code: 'unset' | 'ok' | 'error'; message?: string };
  /** Scalar attributes only (the workflow spans also carry the workflow's whole info). */
  attributes: Record<string, string | number | boolean>;
}

const KINDS = ['internal', 'server', 'client', 'producer', 'consumer'] as const;
const STATUS_CODES = ['unset', 'ok', 'error'] as const;

/** Converts an SDK span for the debug route. */
export function spanToJson(span: ReadableSpan): SpanJson {
  const attributes: SpanJson['attributes'] = {};
  for (const [key, value] of Object.entries(span.attributes)) {
    if (typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') {
      attributes[key] = value;
    }
  }
  return {
    trace_id: span.spanContext().traceId,
    span_id: span.spanContext().spanId,
    parent_span_id: span.parentSpanId ?? null,
    name: span.name,
    kind: KINDS[span.kind] ?? 'internal',
    start_ms: hrTimeToMilliseconds(span.startTime),
    end_ms: hrTimeToMilliseconds(span.endTime),
    status: {
      code: STATUS_CODES[span.status.code] ?? 'unset',
      ...(span.status.message ? { message: span.status.message } : {}),
    },
    attributes,
  };
}

/** The in-memory exporter; give it to a `SimpleSpanProcessor`. */
export class SpanStore implements SpanExporter {
  /**
   * Spans and the tenants their spans name, by trace id, in insertion order (a Map keeps it),
   * oldest trace first.
   */
  private readonly traces = new Map<string, { spans: SpanJson[]; tenants: Set<string> }>();

  export(spans: ReadableSpan[], resultCallback: (result: ExportResult) => void): void {
    for (const span of spans) {
      const json = spanToJson(span);
      let kept = this.traces.get(json.trace_id);
      if (!kept) {
        kept = { spans: [], tenants: new Set() };
        this.traces.set(json.trace_id, kept);
        if (this.traces.size > SPAN_STORE_MAX_TRACES) {
          this.traces.delete(this.traces.keys().next().value!);
        }
      }
      const tenant = span.attributes[TENANT_ID_ATTRIBUTE];
      if (typeof tenant === 'string') kept.tenants.add(tenant);
      if (kept.spans.length < SPAN_STORE_MAX_SPANS_PER_TRACE) kept.spans.push(json);
    }
    resultCallback({ code: ExportResultCode.SUCCESS });
  }

  /**
   * The finished spans of a trace, by start time, when `tenant` made it (every span naming a
   * tenant names this one); empty for a trace it does not hold or another tenant's.
   */
  trace(traceId: string, tenant: string): SpanJson[] {
    const kept = this.traces.get(traceId);
    if (!kept || kept.tenants.size !== 1 || !kept.tenants.has(tenant)) return [];
    return [...kept.spans].sort((a, b) => a.start_ms - b.start_ms);
  }

  async shutdown(): Promise<void> {
    this.traces.clear();
  }
}
