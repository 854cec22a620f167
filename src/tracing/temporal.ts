/**
 * The trace across Temporal, through `@temporalio/interceptors-opentelemetry`: the client
 * interceptor puts the start's span context in the workflow's headers, the workflow interceptor
 * module (bundled into the workflow code) makes the workflow's and its activity schedules' spans
 * and hands them to the worker through the `exporter` sink, and the activity inbound interceptor
 * continues the trace in each activity attempt. Our own interceptors add the operation and
 * sandbox ids to the spans. All of it is empty when traces are off (src/tracing/spans.ts).
 *
 * An activity that completes asynchronously (it throws `CompleteAsyncError` and is completed
 * later through the client) ends its span when it throws: the span covers the attempt's start,
 * not the wait for its completion.
 */
import { createRequire } from 'node:module';
import { trace } from '@opentelemetry/api';
import type { ReadableSpan, SpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  makeWorkflowExporter,
  OpenTelemetryActivityInboundInterceptor,
  OpenTelemetryActivityOutboundInterceptor,
  OpenTelemetryWorkflowClientInterceptor,
} from '@temporalio/interceptors-opentelemetry';
import type { WorkflowClientInterceptor } from '@temporalio/client';
import type { ActivityInterceptorsFactory, InjectedSinks } from '@temporalio/worker';
import type { OpenTelemetryWorkflowExporter } from '@temporalio/interceptors-opentelemetry';
import { OPERATION_ID_ATTRIBUTE, SANDBOX_ID_ATTRIBUTE, type Tracing } from './spans.js';

/** The package's workflow interceptor module (inbound, outbound and internals interceptors). */
export const OTEL_WORKFLOW_INTERCEPTOR_MODULE = createRequire(import.meta.url).resolve(
  '@temporalio/interceptors-opentelemetry/lib/workflow-interceptors',
);

/** The header the interceptors carry the span context in (the package's `TRACE_HEADER`). */
export const OTEL_TRACE_HEADER = '_tracer-data';

/** An operation id (`op_…`); workflow ids of creates and deletes are operation ids. */
const OPERATION_ID = /^op_/;

/** Names the operation on the start's span (the workflow id is the operation id). */
const operationOnStartSpan: WorkflowClientInterceptor = {
  start(input, next) {
    markActiveSpan(input.options.workflowId);
    return next(input);
  },
  startWithDetails(input, next) {
    markActiveSpan(input.options.workflowId);
    return next(input);
  },
};

function markActiveSpan(workflowId: string): void {
  if (OPERATION_ID.test(workflowId)) {
    trace.getActiveSpan()?.setAttribute(OPERATION_ID_ATTRIBUTE, workflowId);
  }
}

/**
 * The Temporal client's workflow interceptors: the OpenTelemetry one (outermost: the start's
 * span) and the one naming the operation on it; none when traces are off.
 */
export function tracingClientInterceptors(
  tracing: Tracing | undefined,
): WorkflowClientInterceptor[] {
  return tracing ? [new OpenTelemetryWorkflowClientInterceptor(), operationOnStartSpan] : [];
}

/** Names the activity's operation and sandbox (from its input) on the attempt's span. */
const operationOnActivitySpan: ActivityInterceptorsFactory = () => ({
  inbound: {
    execute(input, next) {
      const { operationId, sandboxId } = (input.args[0] ?? {}) as {
        operationId?: unknown;
        sandboxId?: unknown;
      };
      const span = trace.getActiveSpan();
      if (typeof operationId === 'string') span?.setAttribute(OPERATION_ID_ATTRIBUTE, operationId);
      if (typeof sandboxId === 'string') span?.setAttribute(SANDBOX_ID_ATTRIBUTE, sandboxId);
      return next(input);
    },
  },
});

/**
 * The worker's activity interceptors for traces, in order: the OpenTelemetry one (outermost:
 * each attempt's span, a child of the workflow's schedule span; its outbound adds the trace and
 * span ids to the activity's log lines), then the one naming the operation on that span.
 */
export function tracingActivityInterceptors(
  tracing: Tracing | undefined,
): ActivityInterceptorsFactory[] {
  if (!tracing) return [];
  return [
    (ctx) => ({
      inbound: new OpenTelemetryActivityInboundInterceptor(ctx),
      outbound: new OpenTelemetryActivityOutboundInterceptor(ctx),
    }),
    operationOnActivitySpan,
  ];
}

/** The workflow interceptor modules traces need in the workflow bundle; none when off. */
export function tracingWorkflowModules(tracing: Tracing | undefined): string[] {
  return tracing ? [OTEL_WORKFLOW_INTERCEPTOR_MODULE] : [];
}

/**
 * The worker's sinks for traces: `exporter`, which receives the workflow's spans (each carries
 * the workflow's info, `workflowId` among it) and hands them to the SDK's span processor with
 * the operation id added.
 */
export function tracingSinks(
  tracing: Tracing | undefined,
): InjectedSinks<{ exporter?: OpenTelemetryWorkflowExporter }> {
  if (!tracing) return {};
  return {
    exporter: makeWorkflowExporter(withOperationId(tracing.spanProcessor), tracing.resource),
  };
}

/**
 * A span processor that names the operation on a finished workflow span (its `workflowId`
 * attribute, set by the sink from the workflow's info) before `processor` exports it.
 */
function withOperationId(processor: SpanProcessor): SpanProcessor {
  return {
    onStart: (span, context) => processor.onStart(span, context),
    onEnd(span: ReadableSpan) {
      const workflowId = span.attributes.workflowId;
      if (typeof workflowId === 'string' && OPERATION_ID.test(workflowId)) {
        (span.attributes as Record<string, unknown>)[OPERATION_ID_ATTRIBUTE] = workflowId;
      }
      processor.onEnd(span);
    },
    forceFlush: () => processor.forceFlush(),
    shutdown: () => processor.shutdown(),
  };
}
