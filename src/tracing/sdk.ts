/**
 * Tracing (docs/observability.md): the OpenTelemetry Node SDK, configured by the standard
 * `OTEL_*` variables, with the instrumentations of the HTTP server (node `http`, which Express
 * serves on) and of the apiserver calls (`@kubernetes/client-node` 2 sends them with the
 * `undici` package, whose diagnostics channels `@opentelemetry/instrumentation-undici` reads).
 * Off unless an exporter is configured: then no SDK is started, no module is patched, and the
 * `@opentelemetry/api` calls elsewhere are the API's no-ops.
 *
 * Loaded only when traces are on (`tracingRequested`, src/tracing/spans.ts); one SDK per process,
 * found by the Temporal client and worker through `currentTracing`.
 */
import { createRequire } from 'node:module';
import { trace, type ProxyTracerProvider } from '@opentelemetry/api';
import { HttpInstrumentation } from '@opentelemetry/instrumentation-http';
import { UndiciInstrumentation } from '@opentelemetry/instrumentation-undici';
import { NodeSDK } from '@opentelemetry/sdk-node';
import type { BasicTracerProvider, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  currentTracing,
  operationAttributesOfActiveSpan,
  setCurrentTracing,
  type Tracing,
} from './spans.js';

/** Paths whose requests make no span: probes and scrapes, many a minute, never part of a create. */
const UNTRACED_PATHS = new Set(['/healthz', '/readyz', '/metrics']);

/** Options of {@link startTracing}. */
export interface StartTracingOptions {
  /** `service.name` when neither OTEL_SERVICE_NAME nor OTEL_RESOURCE_ATTRIBUTES names one. */
  serviceName: string;
  /**
   * Where spans go instead of the exporters the environment names (the embedded stack's span
   * store, a test's in-memory exporter). Unset: OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_*.
   */
  spanProcessors?: SpanProcessor[];
}

/**
 * Starts the SDK: the tracer provider (W3C `traceparent` and `baggage` propagation unless
 * OTEL_PROPAGATORS says otherwise), the exporters, the HTTP server and undici
 * instrumentations. An incoming `traceparent` makes the request's span a child of the caller's;
 * apiserver calls make spans only inside a trace (the informers' watches and the sweeper's
 * lists, outside any request, make none).
 * Call it before the Temporal client and worker are built; a second call returns the first SDK.
 * @returns the started SDK
 */
export function startTracing(options: StartTracingOptions): Tracing {
  const running = currentTracing();
  if (running) return running;
  const namedByEnv =
    Boolean(process.env.OTEL_SERVICE_NAME?.trim()) ||
    /(^|,)\s*service\.name=/.test(process.env.OTEL_RESOURCE_ATTRIBUTES ?? '');
  const sdk = new NodeSDK({
    serviceName: namedByEnv ? undefined : options.serviceName,
    ...(options.spanProcessors ? { spanProcessors: options.spanProcessors } : {}),
    // Traces only: no log records are exported (pino writes the logs).
    logRecordProcessors: [],
    instrumentations: [
      new HttpInstrumentation({
        ignoreIncomingRequestHook: (request) =>
          UNTRACED_PATHS.has((request.url ?? '').split('?')[0] ?? ''),
        // The service's outgoing calls (the apiserver's) go through undici, traced below.
        disableOutgoingRequestInstrumentation: true,
      }),
      new UndiciInstrumentation({
        requireParentforSpans: true,
        startSpanHook: () => operationAttributesOfActiveSpan(),
      }),
    ],
  });
  sdk.start();
  // The instrumentations patch a module when it is required after they are enabled. `http` is
  // usually loaded already (by Express, by this process's imports), so require it once more
  // through the hooks: its Server, which every server of the process shares, is patched now.
  createRequire(import.meta.url)('node:http');
  const provider = (trace.getTracerProvider() as ProxyTracerProvider).getDelegate() as
    BasicTracerProvider | undefined;
  if (typeof provider?.getActiveSpanProcessor !== 'function') {
    throw new Error('the OpenTelemetry SDK started without a tracer provider');
  }
  const tracing: Tracing = {
    spanProcessor: provider.getActiveSpanProcessor(),
    resource: provider.resource,
    async shutdown() {
      setCurrentTracing(undefined);
      await sdk.shutdown();
    },
  };
  setCurrentTracing(tracing);
  return tracing;
}
