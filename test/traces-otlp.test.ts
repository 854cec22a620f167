/**
 * The OTLP export reaches a receiver: with OTEL_TRACES_EXPORTER=otlp and
 * OTEL_EXPORTER_OTLP_ENDPOINT (the default protocol, http/protobuf), a create's spans arrive at
 * a real OTLP/HTTP receiver (test/support/otlp-receiver.mjs, its own process), decoded with the
 * OTLP protobuf definitions that `@opentelemetry/otlp-transformer` ships.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { OPERATION_ID_ATTRIBUTE } from '../src/tracing/spans.js';
import { acceptedCreate, awaitOperation, createBody, type OperationBody } from './support/api.js';
import { startTracedStack, type TracedStack } from './support/traced-stack.js';
import { waitUntil } from '../tools/wait-until.js';

interface OtlpValue {
  stringValue?: string;
}
interface OtlpSpan {
  traceId: Uint8Array;
  name: string;
  attributes: Array<{ key: string; value: OtlpValue }>;
}
interface OtlpRequest {
  resourceSpans: Array<{
    resource: { attributes: Array<{ key: string; value: OtlpValue }> };
    scopeSpans: Array<{ spans: OtlpSpan[] }>;
  }>;
}
/** The generated protobuf module of otlp-transformer (protobufjs static code). */
const otlp = createRequire(import.meta.url)(
  '@opentelemetry/otlp-transformer/build/src/generated/root.js',
) as {
  opentelemetry: {
    proto: {
      collector: {
        trace: { v1: { ExportTraceServiceRequest: { decode(bytes: Uint8Array): OtlpRequest } } };
      };
    };
  };
};
const { ExportTraceServiceRequest } = otlp.opentelemetry.proto.collector.trace.v1;

let receiver: ChildProcess;
const received: Array<{ path: string; contentType: string; request: OtlpRequest }> = [];
let traced: TracedStack;

beforeAll(async () => {
  receiver = fork(fileURLToPath(new URL('./support/otlp-receiver.mjs', import.meta.url)));
  const port = await new Promise<number>((resolve) => {
    receiver.on(
      'message',
      (message: { port?: number; path?: string; contentType?: string; body?: string }) => {
        if (message.port) return resolve(message.port);
        received.push({
          path: message.path!,
          contentType: message.contentType!,
          request: ExportTraceServiceRequest.decode(Buffer.from(message.body!, 'base64')),
        });
      },
    );
  });
  process.env.OTEL_TRACES_EXPORTER = 'otlp';
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = `http://127.0.0.1:${port}`;
  process.env.OTEL_SERVICE_NAME = 'durable-sandbox-otlp-test';
  process.env.OTEL_BSP_SCHEDULE_DELAY = '200';
  traced = await startTracedStack();
});

afterAll(async () => {
  await traced?.stop();
  receiver?.disconnect();
});

it("exports a create's trace to the OTLP endpoint, service name and operation id included", async () => {
  const { api, app } = traced;
  const accepted = await acceptedCreate(app, api.tenantA, createBody(2048));
  await awaitOperation(app, api.tenantA, accepted.id);
  const traceId = (accepted as OperationBody & { trace_id: string }).trace_id;

  const names = await waitUntil(
    async () => {
      const spans = received
        .flatMap(({ request: r }) => r.resourceSpans)
        .flatMap((rs) => rs.scopeSpans.flatMap((ss) => ss.spans))
        .filter((span) => Buffer.from(span.traceId).toString('hex') === traceId);
      const found = spans.map((span) => span.name);
      return found.includes('RunWorkflow:createSandbox') &&
        found.includes('RunActivity:markSandboxRunning')
        ? spans
        : undefined;
    },
    { timeoutMs: 60_000, what: `the spans of trace ${traceId} at the receiver` },
  );
  expect(names.map((s) => s.name)).toEqual(
    expect.arrayContaining([
      'POST /v1/sandboxes',
      'StartWorkflow:createSandbox',
      'RunActivity:createPod',
    ]),
  );
  const workflow = names.find((s) => s.name === 'RunWorkflow:createSandbox')!;
  expect(workflow.attributes.find((a) => a.key === OPERATION_ID_ATTRIBUTE)?.value.stringValue).toBe(
    accepted.id,
  );
  expect(received.every((r) => r.path === '/v1/traces')).toBe(true);
  expect(received[0]!.contentType).toBe('application/x-protobuf');
  const serviceNames = received.flatMap(({ request: r }) =>
    r.resourceSpans.map(
      (rs) => rs.resource.attributes.find((a) => a.key === 'service.name')?.value.stringValue,
    ),
  );
  expect(new Set(serviceNames)).toEqual(new Set(['durable-sandbox-otlp-test']));
});
