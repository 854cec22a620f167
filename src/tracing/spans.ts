/**
 * What the rest of the service knows of tracing, without loading the SDK (src/tracing/sdk.ts): the
 * span attributes naming an operation, whether the environment asks for traces, the SDK this
 * process started (if any), and the marking of a create's request span. Only
 * `@opentelemetry/api`, whose calls are no-ops while no SDK is registered.
 */
import { isSpanContextValid, trace, type SpanContext } from '@opentelemetry/api';
import type { IResource } from '@opentelemetry/resources';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';

/** Span attribute naming the operation (`op_…`) a span works for. */
export const OPERATION_ID_ATTRIBUTE = 'durable_sandbox.operation_id';
/** Span attribute naming the sandbox (`sbx_…`). */
export const SANDBOX_ID_ATTRIBUTE = 'durable_sandbox.sandbox_id';
/**
 * Span attribute naming the tenant whose authenticated request a span serves (set on the
 * request's span); the embedded stack's span store shows a trace only to that tenant
 * (src/tracing/span-store.ts).
 */
export const TENANT_ID_ATTRIBUTE = 'durable_sandbox.tenant_id';

/**
 * Span attribute of the outcome's write at the decision (src/verdict/outcome-at-decision.ts):
 * whether the write applied (false: the pod-uid fence, or another outcome recorded first).
 */
export const OUTCOME_RECORDED_ATTRIBUTE = 'durable_sandbox.outcome_recorded';

/** A started SDK. */
export interface Tracing {
  /** The span processor of the SDK's tracer provider: workflow spans go there too. */
  spanProcessor: SpanProcessor;
  /** The resource (service.name, host, process) the SDK's spans carry. */
  resource: IResource;
  /** Flushes the spans still queued and stops the SDK. */
  shutdown(): Promise<void>;
}

let current: Tracing | undefined;

/**
 * Whether the environment asks for traces: `OTEL_TRACES_EXPORTER` names an exporter (`otlp`,
 * `console`, `zipkin`), or an OTLP endpoint is set (`OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; the exporter is then `otlp`, the specification's
 * default). `OTEL_TRACES_EXPORTER=none` and `OTEL_SDK_DISABLED=true` turn traces off.
 * Source: OpenTelemetry specification, "Environment Variable Specification".
 */
export function tracingRequested(env: NodeJS.ProcessEnv = process.env): boolean {
  return tracingChoice(env) === 'exporters';
}

/**
 * What the environment says about traces: `exporters` (as {@link tracingRequested}), `off`
 * (`OTEL_TRACES_EXPORTER=none` or `OTEL_SDK_DISABLED=true`), or `unset` (nothing said; off,
 * except in the embedded stack, which then keeps spans in memory).
 */
export function tracingChoice(env: NodeJS.ProcessEnv = process.env): 'exporters' | 'off' | 'unset' {
  if ((env.OTEL_SDK_DISABLED ?? '').trim().toLowerCase() === 'true') return 'off';
  const exporters = (env.OTEL_TRACES_EXPORTER ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  if (exporters.includes('none')) return 'off';
  if (exporters.length > 0) return 'exporters';
  const endpoint =
    env.OTEL_EXPORTER_OTLP_ENDPOINT?.trim() || env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT?.trim();
  return endpoint ? 'exporters' : 'unset';
}

/** The SDK this process started, or undefined when traces are off. */
export function currentTracing(): Tracing | undefined {
  return current;
}

/**
 * The operation and sandbox ids of the active span, for a child span to carry too (an
 * apiserver call made by an activity names the activity's operation).
 */
export function operationAttributesOfActiveSpan(): Record<string, string> {
  const active = trace.getActiveSpan() as { attributes?: Record<string, unknown> } | undefined;
  const attributes: Record<string, string> = {};
  for (const key of [OPERATION_ID_ATTRIBUTE, SANDBOX_ID_ATTRIBUTE]) {
    const value = active?.attributes?.[key];
    if (typeof value === 'string') attributes[key] = value;
  }
  return attributes;
}

/**
 * Names the active span (an HTTP request's) after its route, as the HTTP semantic conventions
 * do: `POST /v1/sandboxes`, attribute `http.route`. The HTTP instrumentation knows only the method.
 */
export function nameRequestSpan(method: string, route: string): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  span.updateName(`${method} ${route}`);
  span.setAttribute('http.route', route);
}

/**
 * Names the tenant of an authenticated request on the active span (the request's span), so the
 * trace is shown to that tenant only. No-op while no span records.
 */
export function markRequestTenant(tenant: string): void {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return;
  span.setAttribute(TENANT_ID_ATTRIBUTE, tenant);
}

/** Records the SDK src/tracing/sdk.ts started (undefined: stopped). */
export function setCurrentTracing(tracing: Tracing | undefined): void {
  current = tracing;
}

/**
 * Names the operation and sandbox on the active span (a create's request span) and returns the
 * trace id it is recorded in, for the operation to keep.
 * @returns 32 lowercase hex digits, or undefined when no span records (traces off, or the
 *   caller's `traceparent` asked not to sample)
 */
export function markOperationSpan(operationId: string, sandboxId: string): string | undefined {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return undefined;
  span.setAttributes({ [OPERATION_ID_ATTRIBUTE]: operationId, [SANDBOX_ID_ATTRIBUTE]: sandboxId });
  return span.spanContext().traceId;
}

/**
 * The ids of the active span, when there is one that records (a traced create's activity
 * attempt): for work done later, outside that span's context, to be traced as its child (with
 * `trace.setSpanContext`). Undefined when traces are off or the span is not sampled.
 */
export function activeSpanContext(): SpanContext | undefined {
  const span = trace.getActiveSpan();
  if (!span?.isRecording()) return undefined;
  const ids = span.spanContext();
  return isSpanContextValid(ids) ? ids : undefined;
}
