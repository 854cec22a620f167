/**
 * The outcome at the decision (docs/architecture.md, "The outcome at the decision"): whoever
 * decides a readiness wait that ends the create (the readiness decider, or the wait activity
 * from its cache) records the operation's outcome before failing the wait, so the operation
 * shows `failed` without waiting for a workflow task, and the workflow writes no outcome of its
 * own. Only for a wait whose workflow asked for it (`recordOutcome`, from the patch
 * `outcome-at-decision` on), and fenced by the pod: the write applies only while the
 * operation's sandbox records the pod's uid.
 */
import { context, SpanStatusCode, trace, type SpanContext } from '@opentelemetry/api';
import type { ApplicationFailure } from '@temporalio/common';
import type { PodRef } from '../kubernetes/pods.js';
import type { ReadinessOutcome } from '../kubernetes/readiness-watch.js';
import type { Store } from '../store/index.js';
import { operationErrorOf, type CreateFailureDetails } from '../contract/index.js';
import { createFailure, readinessFailure } from './create-failure.js';
import {
  activeSpanContext,
  OPERATION_ID_ATTRIBUTE,
  OUTCOME_RECORDED_ATTRIBUTE,
} from '../tracing/spans.js';

/**
 * How long a decision waits for its outcome write, in ms: a store that hangs (a partition) must
 * not hold the wait's failure back; the workflow's own write then finds what committed.
 */
export const OUTCOME_WRITE_TIMEOUT_MS = 2_000;

/** The wait outcomes that end the create (compensation follows); the others re-place. */
const ENDS_THE_CREATE: ReadonlySet<ReadinessOutcome['outcome']> = new Set([
  'refused',
  'podFailed',
  'watchRefused',
]);

/** What {@link failureAtDecision} did. */
export interface FailureAtDecision {
  /**
   * The wait's failure, with `outcomeRecorded: true` in its details when the row was written
   * here ({@link isOutcomeRecorded}).
   */
  failure: ApplicationFailure;
  /** The store's error, when the write failed (the workflow then writes the outcome itself). */
  error?: Error;
}

/** Whether `failure` says its outcome was recorded at the decision (`outcomeRecorded`). */
export function isOutcomeRecorded(failure: ApplicationFailure | undefined): boolean {
  return (failure?.details?.[0] as CreateFailureDetails | undefined)?.outcomeRecorded === true;
}

/** The field a decision's log line adds: `outcome_recorded: true` when it was recorded. */
export function outcomeRecordedField(failure: ApplicationFailure | undefined): {
  outcome_recorded?: true;
} {
  return isOutcomeRecorded(failure) ? { outcome_recorded: true } : {};
}

/** The span the writes are traced under (a no-op while no OpenTelemetry SDK is registered). */
const tracer = trace.getTracer('durable-sandbox');

/**
 * The failure of a wait that ended without an IP; for a wait that ends the create, the
 * operation's outcome (status `failed`, the error the workflow would write, phase
 * `compensating`) is written first, under the pod-uid fence.
 *
 * In a traced create the write is the span `recordOperationOutcome` (attributes: the operation
 * id, `durable_sandbox.outcome_recorded`; status ERROR when the store failed or did not answer),
 * a child of `wait.traceParent` (the wait activity's attempt, kept by the decider) or of the
 * active span (the activity deciding from its cache). No span without either: a decision for an
 * untraced create starts no trace of its own.
 * Never throws: a store error, or no answer within `timeoutMs` (default
 * {@link OUTCOME_WRITE_TIMEOUT_MS}), leaves the outcome to the workflow (returned in `error`).
 * @param wait the create's operation (= workflow) id, the pod the wait is for, and the span to
 *   trace the write under
 */
export async function failureAtDecision(
  store: Pick<Store, 'recordOperationOutcome'>,
  wait: { operationId: string; pod: PodRef; traceParent?: SpanContext },
  outcome: Exclude<ReadinessOutcome, { outcome: 'ready' }>,
  timeoutMs: number = OUTCOME_WRITE_TIMEOUT_MS,
): Promise<FailureAtDecision> {
  const failure = readinessFailure(outcome, wait.pod);
  if (!ENDS_THE_CREATE.has(outcome.outcome)) return { failure };
  const parent = wait.traceParent ?? activeSpanContext();
  if (!parent) return recordOutcome(store, wait, failure, timeoutMs);
  return tracer.startActiveSpan(
    'recordOperationOutcome',
    { attributes: { [OPERATION_ID_ATTRIBUTE]: wait.operationId } },
    trace.setSpanContext(context.active(), parent),
    async (span) => {
      try {
        const decided = await recordOutcome(store, wait, failure, timeoutMs);
        span.setAttribute(OUTCOME_RECORDED_ATTRIBUTE, isOutcomeRecorded(decided.failure));
        if (decided.error) {
          span.recordException(decided.error);
          span.setStatus({ code: SpanStatusCode.ERROR, message: decided.error.message });
        }
        return decided;
      } finally {
        span.end();
      }
    },
  );
}

/** The write of {@link failureAtDecision}, bounded by `timeoutMs`. */
async function recordOutcome(
  store: Pick<Store, 'recordOperationOutcome'>,
  wait: { operationId: string; pod: PodRef },
  failure: ApplicationFailure,
  timeoutMs: number,
): Promise<FailureAtDecision> {
  const details = failure.details?.[0] as CreateFailureDetails;
  let timer: NodeJS.Timeout | undefined;
  try {
    const write = store.recordOperationOutcome({
      operationId: wait.operationId,
      status: 'failed',
      error: operationErrorOf(failure.message, details),
      podUid: wait.pod.uid,
    });
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the store did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    // A write that commits after the timeout is found by the workflow's own write (it adopts it).
    write.catch(() => undefined);
    if (!(await Promise.race([write, late]))) return { failure };
  } catch (err) {
    return { failure, error: err as Error };
  } finally {
    clearTimeout(timer);
  }
  return { failure: createFailure(failure.message, { ...details, outcomeRecorded: true }) };
}
