/**
 * The span of the outcome's write at the decision (src/verdict/outcome-at-decision.ts;
 * docs/observability.md): a child of the wait's attempt span, given by its ids (the decider,
 * after that span ended) or active (the wait activity deciding from its cache); no span, and so
 * no trace of its own, for a decision of an untraced create. The real OpenTelemetry SDK with an
 * in-memory exporter; the store is a recorder of the calls. Fast tier.
 */
import { context, SpanStatusCode, trace, type SpanContext } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { failureAtDecision } from '../src/verdict/outcome-at-decision.js';
import type { ReadinessOutcome } from '../src/verdict/readiness-watch.js';
import { OPERATION_ID_ATTRIBUTE, OUTCOME_RECORDED_ATTRIBUTE } from '../src/tracing/spans.js';

const POD = { name: 'sbx-trace-g1', uid: 'uid-trace' };
const WAIT = { operationId: 'op_trace', pod: POD };
const refused: ReadinessOutcome = {
  outcome: 'refused',
  code: 'InvalidArgument',
  reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
  eventName: 'sbx-trace-g1.181',
  nodeName: 'node-a',
};

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });

beforeAll(() => {
  // Registers the provider and the async-hooks context manager, as the SDK does (src/tracing/sdk.ts).
  provider.register();
});
afterAll(async () => {
  await provider.shutdown();
  trace.disable();
  context.disable();
});
beforeEach(() => exporter.reset());

/** A store whose outcome writes answer `answer` (or throw it). */
function store(answer: boolean | Error) {
  return {
    async recordOperationOutcome(): Promise<boolean> {
      if (answer instanceof Error) throw answer;
      return answer;
    },
  };
}

/** The wait's attempt span, ended, as the decider finds it: only its ids are kept. */
function endedAttempt(): SpanContext {
  const span = provider.getTracer('test').startSpan('RunActivity:awaitPodReady');
  span.end();
  return span.spanContext();
}

describe('the span of the outcome at the decision', () => {
  it("the decider's write is a child of the wait's attempt, by its ids", async () => {
    const parent = endedAttempt();
    await failureAtDecision(store(true), { ...WAIT, traceParent: parent }, refused);
    const [span] = exporter.getFinishedSpans().filter((s) => s.name === 'recordOperationOutcome');
    expect(span?.spanContext().traceId).toBe(parent.traceId);
    expect(span?.parentSpanId).toBe(parent.spanId);
    expect(span?.attributes[OPERATION_ID_ATTRIBUTE]).toBe(WAIT.operationId);
    expect(span?.attributes[OUTCOME_RECORDED_ATTRIBUTE]).toBe(true);
    expect(span?.status.code).not.toBe(SpanStatusCode.ERROR);
  });

  it("the activity's write (from its cache) is a child of the active attempt span", async () => {
    const attempt = provider.getTracer('test').startSpan('RunActivity:awaitPodReady');
    await context.with(trace.setSpan(context.active(), attempt), () =>
      failureAtDecision(store(true), WAIT, refused),
    );
    attempt.end();
    const [span] = exporter.getFinishedSpans().filter((s) => s.name === 'recordOperationOutcome');
    expect(span?.parentSpanId).toBe(attempt.spanContext().spanId);
  });

  it('a write that did not apply says so; a store error marks the span ERROR', async () => {
    await failureAtDecision(store(false), { ...WAIT, traceParent: endedAttempt() }, refused);
    await failureAtDecision(
      store(new Error('database is locked')),
      { ...WAIT, traceParent: endedAttempt() },
      refused,
    );
    const [fenced, failed] = exporter
      .getFinishedSpans()
      .filter((s) => s.name === 'recordOperationOutcome');
    expect(fenced?.attributes[OUTCOME_RECORDED_ATTRIBUTE]).toBe(false);
    expect(fenced?.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(failed?.attributes[OUTCOME_RECORDED_ATTRIBUTE]).toBe(false);
    expect(failed?.status).toEqual({ code: SpanStatusCode.ERROR, message: 'database is locked' });
  });

  it('an untraced create (no ids, no active span) and a re-placement make no span', async () => {
    const decided = await failureAtDecision(store(true), WAIT, refused);
    expect(decided.failure.type).toBe('InvalidRequest');
    await failureAtDecision(
      store(true),
      { ...WAIT, traceParent: endedAttempt() },
      { outcome: 'unschedulable', reason: '0/3 nodes' },
    );
    expect(exporter.getFinishedSpans().map((s) => s.name)).toEqual(['RunActivity:awaitPodReady']);
  });
});
