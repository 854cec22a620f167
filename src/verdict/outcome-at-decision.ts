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
import type { ReadinessOutcome } from './readiness-watch.js';
import type { Store } from '../store/index.js';
import {
  operationErrorOf,
  rootfsFloorEvidenceOf,
  teachesRootfsFloor,
  type CreateFailureDetails,
  type LearnedRootfsFloor,
} from '../../contract/index.js';
import { rootfsFloorOf } from './rootfs-floor-evidence.js';
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
  /** The rootfs floor the refusal taught, stored before the outcome ({@link FloorLearning}). */
  floor?: LearnedRootfsFloor;
  /** The store's error when the floor could not be learned (the retirement learns it). */
  floorError?: Error;
}

/**
 * What a decision needs to teach a refusal's rootfs floor (docs/architecture.md, "Rootfs
 * floors") before it records the outcome, so no reader sees the create `failed` before the
 * floor that refuses the next too-small create at once is stored: the store, and the image the
 * worker's catalog runs for a template (what createPod ran). The create's tenant and template
 * are read from its sandbox's row, never from the pod.
 */
export interface FloorLearning {
  store: Pick<Store, 'getSandboxById' | 'recordRootfsFloor'>;
  /** The image of `template` in the worker's catalog; undefined when it has none. */
  imageOf(template: string): string | undefined;
}

/**
 * The {@link FloorLearning} of a worker: its store and its template catalog (src/config/), the one
 * createPod runs pods from.
 */
export function floorLearning(deps: {
  store: FloorLearning['store'];
  templates: Record<string, { image: string }>;
}): FloorLearning {
  return {
    store: deps.store,
    imageOf: (template) =>
      Object.hasOwn(deps.templates, template) ? deps.templates[template]?.image : undefined,
  };
}

/** A wait's decision: the create's operation (= workflow) id, its sandbox, its pod, its span. */
export interface DecidedWait {
  operationId: string;
  /** As the wait activity named it; without it no floor is learned here. */
  sandboxId?: string;
  pod: PodRef;
  traceParent?: SpanContext;
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
  wait: DecidedWait,
  outcome: Exclude<ReadinessOutcome, { outcome: 'ready' }>,
  timeoutMs: number = OUTCOME_WRITE_TIMEOUT_MS,
  floors?: FloorLearning,
): Promise<FailureAtDecision> {
  const failure = readinessFailure(outcome, wait.pod);
  if (!ENDS_THE_CREATE.has(outcome.outcome)) return { failure };
  const parent = wait.traceParent ?? activeSpanContext();
  if (!parent) return recordOutcome(store, wait, failure, timeoutMs, floors);
  return tracer.startActiveSpan(
    'recordOperationOutcome',
    { attributes: { [OPERATION_ID_ATTRIBUTE]: wait.operationId } },
    trace.setSpanContext(context.active(), parent),
    async (span) => {
      try {
        const decided = await recordOutcome(store, wait, failure, timeoutMs, floors);
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

/**
 * The writes of {@link failureAtDecision}, bounded together by `timeoutMs`: the refusal's rootfs
 * floor first (when `floors` is given), then the outcome.
 */
async function recordOutcome(
  store: Pick<Store, 'recordOperationOutcome'>,
  wait: DecidedWait,
  failure: ApplicationFailure,
  timeoutMs: number,
  floors?: FloorLearning,
): Promise<FailureAtDecision> {
  const details = failure.details?.[0] as CreateFailureDetails;
  const learned: { floor?: LearnedRootfsFloor; floorError?: Error } = {};
  let timer: NodeJS.Timeout | undefined;
  try {
    const write = (async () => {
      if (floors) Object.assign(learned, await learnFloor(floors, wait, failure.message, details));
      return store.recordOperationOutcome({
        operationId: wait.operationId,
        status: 'failed',
        error: operationErrorOf(failure.message, details),
        podUid: wait.pod.uid,
      });
    })();
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`the store did not answer within ${timeoutMs} ms`)),
        timeoutMs,
      );
    });
    // A write that commits after the timeout is found by the workflow's own write (it adopts it).
    write.catch(() => undefined);
    if (!(await Promise.race([write, late]))) return { failure, ...learned };
  } catch (err) {
    return { failure, error: err as Error, ...learned };
  } finally {
    clearTimeout(timer);
  }
  return {
    failure: createFailure(failure.message, { ...details, outcomeRecorded: true }),
    ...learned,
  };
}

/**
 * Stores the rootfs floor a decisive refusal taught, by the workflow's own rule
 * (contract/create-workflow.ts `rootfsFloorEvidenceOf`), for the image the worker's catalog runs for the sandbox's template
 * and the sandbox's tenant, both as the store holds them. Nothing for a sandbox that is not this
 * operation's, a template the catalog lacks, or evidence out of bounds.
 * @returns the floor stored, or the store's error (never throws)
 */
async function learnFloor(
  floors: FloorLearning,
  wait: DecidedWait,
  message: string,
  details: CreateFailureDetails,
): Promise<{ floor?: LearnedRootfsFloor; floorError?: Error }> {
  if (!teachesRootfsFloor(details) || !wait.sandboxId) return {};
  try {
    const sandbox = await floors.store.getSandboxById(wait.sandboxId);
    if (sandbox?.operationId !== wait.operationId) return {};
    const image = floors.imageOf(sandbox.template);
    if (!image) return {};
    const evidence = rootfsFloorEvidenceOf(details, message, {
      image,
      template: sandbox.template,
      tenantId: sandbox.tenant,
    });
    const floor = evidence && rootfsFloorOf(wait.operationId, evidence, Date.now());
    if (!floor) return {};
    await floors.store.recordRootfsFloor(floor);
    return { floor };
  } catch (err) {
    return { floorError: err as Error };
  }
}
