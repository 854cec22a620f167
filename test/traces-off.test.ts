/**
 * Traces are off by default (docs/observability.md): with no OTEL_* exporter the SDK is not
 * started, node's http server is not patched, the Temporal client and worker get no tracing
 * interceptors, a create's start carries no trace context, and its operation has no trace id,
 * even when the caller sends a traceparent.
 */
import { Server } from 'node:http';
import { trace, type ProxyTracerProvider } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { currentTracing, tracingChoice, tracingRequested } from '../src/tracing/spans.js';
import {
  OTEL_TRACE_HEADER,
  tracingActivityInterceptors,
  tracingClientInterceptors,
  tracingSinks,
  tracingWorkflowModules,
} from '../src/tracing/temporal.js';
import {
  acceptedCreate,
  awaitOperation,
  createBody,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';

describe('what the environment asks for', () => {
  it.each([
    [{}, 'unset'],
    [{ OTEL_SERVICE_NAME: 'x' }, 'unset'],
    [{ OTEL_TRACES_EXPORTER: 'otlp' }, 'exporters'],
    [{ OTEL_TRACES_EXPORTER: 'console,otlp' }, 'exporters'],
    [{ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }, 'exporters'],
    [{ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://collector:4318/v1/traces' }, 'exporters'],
    [{ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }, 'off'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'true' }, 'off'],
  ] as const)('%j means %s', (env, choice) => {
    expect(tracingChoice(env)).toBe(choice);
    expect(tracingRequested(env)).toBe(choice === 'exporters');
  });
});

describe('with no exporter configured', () => {
  let api: ApiStack;
  beforeAll(async () => {
    api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
  });
  afterAll(async () => {
    await api?.stop();
  });

  it('starts no SDK and patches nothing', () => {
    expect(currentTracing()).toBeUndefined();
    const delegate = (trace.getTracerProvider() as ProxyTracerProvider).getDelegate();
    expect('getActiveSpanProcessor' in delegate).toBe(false);
    expect('__wrapped' in Server.prototype.emit).toBe(false);
    expect(tracingClientInterceptors(currentTracing())).toEqual([]);
    expect(tracingActivityInterceptors(currentTracing())).toEqual([]);
    expect(tracingWorkflowModules(currentTracing())).toEqual([]);
    expect(tracingSinks(currentTracing())).toEqual({});
  });

  it('records no trace of a create, even when the caller sends a traceparent', async () => {
    const accepted = await acceptedCreate(api.app, api.tenantA, createBody(2048), {
      traceparent: '00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01',
    });
    expect((accepted as OperationBody & { trace_id: string | null }).trace_id).toBeNull();
    const done = await awaitOperation(api.app, api.tenantA, accepted.id);
    expect(done.status).toBe('succeeded');
    // What Temporal saw: the start carried no trace context.
    const history = await api.stack.temporal.client.workflow.getHandle(accepted.id).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(Object.keys(started?.header?.fields ?? {})).not.toContain(OTEL_TRACE_HEADER);
  });
});
