/**
 * An API stack with traces on: the SDK started first (given span processors, or the OTEL_*
 * exporters), a Temporal client with the tracing interceptors, and a worker that bundles the
 * workflows itself, as in production, so the workflow interceptor modules are the product's.
 */
import { Client } from '@temporalio/client';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { startTracing } from '../../src/tracing/sdk.js';
import type { Tracing } from '../../src/tracing/spans.js';
import { tracingClientInterceptors } from '../../src/tracing/temporal.js';
import { runSandboxWorker } from '../../src/worker/sandbox-worker.js';
import { startApiStack, type ApiStack } from './api.js';

/** What a traced suite gets. */
export interface TracedStack {
  api: ApiStack;
  /** The API app on the traced client. */
  app: ReturnType<ApiStack['appWith']>;
  tracing: Tracing;
  stop(): Promise<void>;
}

/** Starts it; `spanProcessors` unset means the exporters OTEL_* names. Call `stop()` after. */
export async function startTracedStack(spanProcessors?: SpanProcessor[]): Promise<TracedStack> {
  const tracing = startTracing({ serviceName: 'durable-sandbox-test', spanProcessors });
  const api = await startApiStack({ stack: { worker: false, cluster: { startupDelayMs: 100 } } });
  const { stack } = api;
  // Without a prebuilt bundle: the worker bundles the workflows with the tracing modules.
  const started = await runSandboxWorker({
    connection: stack.temporal.nativeConnection,
    namespace: 'default',
    taskQueue: stack.taskQueue,
    kubernetes: stack.kubernetes,
    store: stack.store,
    templates: stack.templates,
    watchRetryDelayMs: 100,
    watchTimeoutSeconds: 25,
  });
  const temporal = new Client({
    connection: stack.temporal.client.connection,
    interceptors: { workflow: tracingClientInterceptors(tracing) },
  });
  return {
    api,
    app: api.appWith({}, { temporal }),
    tracing,
    async stop() {
      await started.stop();
      await api.stop();
      await tracing.shutdown();
    },
  };
}
