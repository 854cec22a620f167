/**
 * One trace per create (docs/observability.md): the HTTP request, the workflow start, the
 * workflow, its activities and their apiserver calls nest in one trace named by the operation
 * id, recorded through an in-memory exporter on the real SDK, dev server and simulated cluster.
 * The worker bundles its workflows itself, as in production, so the workflow interceptor
 * modules it loads are the product's.
 */
import { SpanKind, SpanStatusCode } from '@opentelemetry/api';
import {
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SpanStore } from '../src/tracing/span-store.js';
import {
  OPERATION_ID_ATTRIBUTE,
  OUTCOME_RECORDED_ATTRIBUTE,
  TENANT_ID_ATTRIBUTE,
} from '../src/tracing/spans.js';
import { OTEL_TRACE_HEADER } from '../src/tracing/temporal.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { startTracedStack, type TracedStack } from './support/traced-stack.js';
import { waitUntil } from '../tools/wait-until.js';

const exporter = new InMemorySpanExporter();
/** The embedded stack's span store, behind `GET /debug/traces/{id}` (npm start). */
const spanStore = new SpanStore();
let traced: TracedStack;
let api: ApiStack;
let app: TracedStack['app'];

beforeAll(async () => {
  traced = await startTracedStack([
    new SimpleSpanProcessor(exporter),
    new SimpleSpanProcessor(spanStore),
  ]);
  ({ api, app } = traced);
});

afterAll(async () => {
  await traced?.stop();
});

/** The spans of one trace, once the workflow's last span (its run) has been exported. */
async function traceOf(traceId: string): Promise<ReadableSpan[]> {
  return waitUntil(
    async () => {
      const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
      return spans.some((s) => s.name === 'RunWorkflow:createSandbox') ? spans : undefined;
    },
    { timeoutMs: 60_000, what: `the workflow span of trace ${traceId}` },
  );
}

/** The one span named `name`, failing with the names present when there is not exactly one. */
function one(spans: ReadableSpan[], name: string, where?: (s: ReadableSpan) => boolean) {
  const found = spans.filter((s) => s.name === name && (!where || where(s)));
  expect(found.length, `${name} among ${spans.map((s) => s.name).join(', ')}`).toBe(1);
  return found[0]!;
}

function childrenOf(spans: ReadableSpan[], parent: ReadableSpan): ReadableSpan[] {
  return spans.filter((s) => s.parentSpanId === parent.spanContext().spanId);
}

/** The apiserver calls (undici client spans) an activity attempt made. */
function apiserverCalls(spans: ReadableSpan[], attempt: ReadableSpan): ReadableSpan[] {
  return childrenOf(spans, attempt).filter((s) => s.kind === SpanKind.CLIENT);
}

/** POST /v1/sandboxes, then the operation once done. */
async function create(diskMib: number, headers: Record<string, string> = {}) {
  const accepted = await acceptedCreate(app, api.tenantA, createBody(diskMib), headers);
  const operation = accepted as OperationBody & { trace_id: string | null };
  await awaitOperation(app, api.tenantA, operation.id);
  return operation;
}

/**
 * Checks the nesting request -> start -> workflow -> schedule -> attempt for one activity, and
 * that each of those spans names the operation.
 * @returns the activity's attempt span
 */
function expectActivityUnderWorkflow(
  spans: ReadableSpan[],
  workflow: ReadableSpan,
  activity: string,
  operationId: string,
): ReadableSpan {
  const scheduled = one(
    spans,
    `StartActivity:${activity}`,
    (s) => s.parentSpanId === workflow.spanContext().spanId,
  );
  const attempt = one(
    spans,
    `RunActivity:${activity}`,
    (s) => s.parentSpanId === scheduled.spanContext().spanId,
  );
  for (const span of [scheduled, attempt]) {
    expect(span.attributes[OPERATION_ID_ATTRIBUTE], span.name).toBe(operationId);
  }
  return attempt;
}

describe('one trace per create', () => {
  it('nests request, start, workflow, activities and apiserver calls of a create that succeeds', async () => {
    const operation = await create(2048);
    expect(operation.trace_id).toMatch(/^[0-9a-f]{32}$/);
    const spans = await traceOf(operation.trace_id!);

    const requestSpan = one(spans, 'POST /v1/sandboxes');
    expect(requestSpan.kind).toBe(SpanKind.SERVER);
    expect(requestSpan.parentSpanId).toBeUndefined();
    const start = one(spans, 'StartWorkflow:createSandbox');
    expect(start.parentSpanId).toBe(requestSpan.spanContext().spanId);
    const workflow = one(spans, 'RunWorkflow:createSandbox');
    expect(workflow.parentSpanId).toBe(start.spanContext().spanId);
    for (const span of [requestSpan, start, workflow]) {
      expect(span.attributes[OPERATION_ID_ATTRIBUTE], span.name).toBe(operation.id);
    }

    const createPod = expectActivityUnderWorkflow(spans, workflow, 'createPod', operation.id);
    const podPost = apiserverCalls(spans, createPod);
    expect(podPost.map((s) => s.attributes['http.request.method'])).toEqual(['POST']);
    expect(String(podPost[0]!.attributes['url.full'])).toMatch(/\/namespaces\/sandboxes\/pods$/);
    expect(podPost[0]!.attributes[OPERATION_ID_ATTRIBUTE]).toBe(operation.id);
    expectActivityUnderWorkflow(spans, workflow, 'awaitPodReady', operation.id);
    expectActivityUnderWorkflow(spans, workflow, 'markSandboxRunning', operation.id);
    expect(workflow.status.code).not.toBe(SpanStatusCode.ERROR);
    // What Temporal saw: the start carried the trace context in the workflow's header.
    const history = await api.stack.temporal.client.workflow.getHandle(operation.id).fetchHistory();
    const started = history.events?.[0]?.workflowExecutionStartedEventAttributes;
    expect(Object.keys(started?.header?.fields ?? {})).toContain(OTEL_TRACE_HEADER);
  });

  it('nests the refusal and the compensation of a create the node refuses', async () => {
    const operation = await create(300);
    const spans = await traceOf(operation.trace_id!);
    const workflow = one(spans, 'RunWorkflow:createSandbox');
    expect(workflow.status.code).toBe(SpanStatusCode.ERROR);
    expect(workflow.parentSpanId).toBe(
      one(spans, 'StartWorkflow:createSandbox').spanContext().spanId,
    );

    expectActivityUnderWorkflow(spans, workflow, 'createPod', operation.id);
    const wait = expectActivityUnderWorkflow(spans, workflow, 'awaitPodReady', operation.id);
    // The wait completes asynchronously (docs/architecture.md, "Waiting costs nothing"): its
    // attempt span ends OK when it hands the wait to the decider, UNSET (the exception recorded)
    // when the refusal was already in the caches: the refusal is a BENIGN failure, the caller's
    // error, which Temporal's OpenTelemetry interceptor does not mark ERROR. Either way the
    // refusal fails the workflow span (asserted above).
    expect([SpanStatusCode.OK, SpanStatusCode.UNSET]).toContain(wait.status.code);
    // The outcome, written by whoever decided the wait before failing it (docs/architecture.md,
    // "The outcome at the decision"): under the wait's attempt, even when the decider wrote it
    // after the attempt span had ended.
    const recorded = one(
      spans,
      'recordOperationOutcome',
      (s) => s.parentSpanId === wait.spanContext().spanId,
    );
    expect(recorded.attributes[OPERATION_ID_ATTRIBUTE]).toBe(operation.id);
    expect(recorded.attributes[OUTCOME_RECORDED_ATTRIBUTE]).toBe(true);
    expect(recorded.status.code).not.toBe(SpanStatusCode.ERROR);
    const deletePod = expectActivityUnderWorkflow(spans, workflow, 'deletePod', operation.id);
    const deletes = apiserverCalls(spans, deletePod);
    expect(deletes.map((s) => s.attributes['http.request.method'])).toContain('DELETE');
    for (const call of deletes) expect(call.attributes[OPERATION_ID_ATTRIBUTE]).toBe(operation.id);
    // Local activities (short store writes) run in the same trace.
    expectActivityUnderWorkflow(spans, workflow, 'retireExecution', operation.id);
  });

  it("continues the caller's trace when the request carries a W3C traceparent", async () => {
    const callerTraceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const callerSpanId = '00f067aa0ba902b7';
    const operation = await create(2048, { traceparent: `00-${callerTraceId}-${callerSpanId}-01` });
    expect(operation.trace_id).toBe(callerTraceId);
    const spans = await traceOf(callerTraceId);
    expect(one(spans, 'POST /v1/sandboxes').parentSpanId).toBe(callerSpanId);
    expect(one(spans, 'RunWorkflow:createSandbox').attributes[OPERATION_ID_ATTRIBUTE]).toBe(
      operation.id,
    );
  });

  it('keeps the trace id with the operation, so a later read names it', async () => {
    const operation = await create(2048);
    const read = await request(app).get(`/v1/operations/${operation.id}`).set(bearer(api.tenantA));
    expect(read.body.trace_id).toBe(operation.trace_id);
    expect((await api.stack.store.getOperation(api.tenantA.id, operation.id))?.traceId).toBe(
      operation.trace_id,
    );
  });
});

describe('the debug trace route (npm start)', () => {
  /** `GET /debug/traces/{traceId}` as `who`, over the traced stack's span store. */
  function readTrace(traceId: string, who: typeof api.tenantA) {
    return request(api.appWith({}, { spanStore })).get(`/debug/traces/${traceId}`).set(bearer(who));
  }

  it('serves a trace to the tenant whose request made it, and 404 to any other tenant', async () => {
    const operation = await create(2048);
    const traceId = operation.trace_id!;
    const requestSpan = one(await traceOf(traceId), 'POST /v1/sandboxes');
    expect(requestSpan.attributes[TENANT_ID_ATTRIBUTE]).toBe(api.tenantA.id);
    const mine = await waitUntil(
      async () => {
        const read = await readTrace(traceId, api.tenantA);
        return read.status === 200 ? read : undefined;
      },
      { timeoutMs: 30_000, what: 'the trace served to its tenant' },
    );
    expect((mine.body.spans as Array<{ name: string }>).map((s) => s.name)).toContain(
      'POST /v1/sandboxes',
    );
    const theirs = await readTrace(traceId, api.tenantB);
    expect(theirs.status, theirs.text).toBe(404);
    expect(theirs.body.error.code).toBe('not_found');
    expect(theirs.text).not.toContain('POST /v1/sandboxes');
  });

  it("a request that joins another tenant's trace (a forged traceparent) opens it to nobody", async () => {
    const operation = await create(2048);
    const traceId = operation.trace_id!;
    await traceOf(traceId);
    await waitUntil(async () => (await readTrace(traceId, api.tenantA)).status === 200, {
      timeoutMs: 30_000,
      what: 'the trace served to its tenant',
    });
    const joined = await request(app)
      .get('/v1/sandboxes')
      .set(bearer(api.tenantB))
      .set('traceparent', `00-${traceId}-00f067aa0ba902b7-01`);
    expect(joined.status).toBe(200);
    await waitUntil(
      async () =>
        exporter
          .getFinishedSpans()
          .some(
            (s) =>
              s.spanContext().traceId === traceId &&
              s.attributes[TENANT_ID_ATTRIBUTE] === api.tenantB.id,
          ),
      { timeoutMs: 30_000, what: "tenant B's span in tenant A's trace" },
    );
    expect((await readTrace(traceId, api.tenantB)).status).toBe(404);
    expect((await readTrace(traceId, api.tenantA)).status).toBe(404);
  });
});
