/**
 * An API stack with traces on: the SDK started first (given span processors, or the OTEL_*
 * exporters), a Temporal client with the tracing interceptors, and a worker that bundles the
 * workflows itself, as in production, so the workflow interceptor modules are the product's.
 */
import { Client } from '@temporalio/client';
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import { createMetrics } from '../../activities/metrics.js';
import { SandboxInformers } from '../../kubernetes/sandbox-informers.js';
import { startTracing } from '../../tracing/sdk.js';
import type { Tracing } from '../../tracing/spans.js';
import { tracingClientInterceptors } from '../../tracing/temporal.js';
import { ReadinessDecider } from '../../activities/readiness-decider.js';
import { createSandboxWorker } from '../../worker/worker.js';
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
  const informers = new SandboxInformers({
    client: stack.kubernetes,
    retryDelayMs: 100,
    watchTimeoutSeconds: 25,
  });
  const decider = new ReadinessDecider({
    informers,
    store: stack.store,
    client: new Client({ connection: stack.temporal.nativeConnection, namespace: 'default' }),
  });
  decider.start();
  informers.start();
  const worker = await createSandboxWorker({
    connection: stack.temporal.nativeConnection,
    namespace: 'default',
    taskQueue: stack.taskQueue,
    deps: {
      kubernetes: stack.kubernetes,
      store: stack.store,
      templates: stack.templates,
      informers,
      decider,
      metrics: createMetrics(),
    },
  });
  const running = worker.run();
  const temporal = new Client({
    connection: stack.temporal.client.connection,
    interceptors: { workflow: tracingClientInterceptors(tracing) },
  });
  return {
    api,
    app: api.appWith({}, { temporal }),
    tracing,
    async stop() {
      worker.shutdown();
      await running;
      await decider.stop();
      await informers.stop();
      await api.stop();
      await tracing.shutdown();
    },
  };
}
