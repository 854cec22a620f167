/**
 * The readiness wait activity, `awaitPodReady` (docs/architecture.md, "Waiting costs nothing"):
 * decides the wait from the worker's informer caches when they already know the outcome (writing
 * a create-ending outcome first: src/verdict/outcome-at-decision.ts), and otherwise leaves it to the
 * worker's decider (src/verdict/readiness-decider.ts), which completes it by id. Read with
 * src/verdict/readiness-watch.ts (what a pod's state means) and src/verdict/refusal.ts (what a node's
 * refusal means).
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure, CompleteAsyncError } from '@temporalio/common';
import type { PodRef } from '../kubernetes/pods.js';
import type { SandboxInformers } from '../kubernetes/sandbox-informers.js';
import type { Store } from '../store/index.js';
import type { WaitPlacement } from '../../contract/index.js';
import { activeSpanContext } from '../tracing/spans.js';
import { readinessFailure, readinessFailureLog } from './create-failure.js';
import { failureAtDecision, floorLearning, outcomeRecordedField } from './outcome-at-decision.js';
import type { ReadinessDecider } from './readiness-decider.js';
import { cachedOutcome, type ReadinessOutcome } from './readiness-watch.js';
import { floorFields } from './rootfs-floor-evidence.js';

/** Dependencies of the readiness wait: a worker's (src/activities/pods.ts `PodActivityDeps`). */
export interface ReadinessWaitDeps {
  store: Store;
  /** The worker's template catalog: the image a refusal's rootfs floor is learned for. */
  templates: Record<string, { image: string }>;
  /** The worker's pods and events informers; every wait reads them. */
  informers: SandboxInformers;
  /** The worker's decider, over the same informers: it completes the waits left asynchronous. */
  decider: ReadinessDecider;
}

/** Input of `awaitPodReady`. It has no deadline: the workflow's deadline timer cancels it. */
export interface AwaitPodReadyInput {
  operationId: string;
  sandboxId: string;
  pod: PodRef;
  /**
   * A re-placing create's wait also ends on a refusal with one of these codes, and (from the
   * second placement) on the pod being unschedulable (docs/architecture.md, "Re-placement").
   */
  placement?: WaitPlacement;
  /**
   * Record the create's outcome on its operation at the decision, before failing the wait, when
   * the wait's failure ends the create (src/verdict/outcome-at-decision.ts); set by workflows from
   * the patch `outcome-at-decision` on.
   */
  recordOutcome?: boolean;
}

/** Result of `awaitPodReady`: the pod's IP. */
export interface AwaitPodReadyResult {
  podIp: string;
}

/** Builds the readiness wait activity over a worker's dependencies. */
export function readinessWaitActivities(deps: ReadinessWaitDeps) {
  return {
    /**
     * Waits for the pod's IP without holding anything (docs/architecture.md, "Waiting costs
     * nothing"): decides the wait at once from the informers' caches when they already know the
     * outcome, and otherwise completes asynchronously (`CompleteAsyncError`: no slot held, no
     * heartbeat, nothing recorded). Any worker's {@link ReadinessDecider} then completes or fails
     * it by workflow id and activity id (contract/readiness-wait.ts) on the pod's decisive change.
     * The workflow schedules it under the pod's activity id and with no heartbeat timeout
     * (src/workflows/create-step-options.ts `readinessWait`), as every release from 68490f8 on.
     * @returns the pod IP
     * @throws ApplicationFailure `InvalidRequest` (non-retryable) when the node refused the pod
     *   as invalid; its message names the node's reason and its details are
     *   {@link CreateFailureDetails} with the refusal event's name and time
     * @throws ApplicationFailure `PodFailed` (non-retryable) when the pod failed, vanished or
     *   is being deleted
     * @throws ApplicationFailure `Unavailable` (non-retryable) when the worker may not watch pods
     *   (403, or 401 for longer than its bound): its message names the missing permission
     * @throws ApplicationFailure `NodeRefused` / `Unschedulable` (non-retryable) for a wait with
     *   `placement`: the node refused with a `replace_on` code, or no node can take the pod
     * @throws CompleteAsyncError when the outcome is not known yet (the decider completes it)
     */
    async awaitPodReady(input: AwaitPodReadyInput): Promise<AwaitPodReadyResult> {
      const { info } = Context.current();
      const outcome = cachedOutcome(
        deps.informers,
        input.pod,
        input.placement,
        deps.decider.bounds,
      );
      const workflowId = info.workflowExecution?.workflowId ?? input.operationId;
      if (outcome) {
        deps.decider.settled(input.pod.uid);
        if (outcome.outcome === 'ready' || !input.recordOutcome) {
          return settleOutcome(outcome, input.pod);
        }
        const decided = await failureAtDecision(
          deps.store,
          { operationId: workflowId, sandboxId: input.sandboxId, pod: input.pod },
          outcome,
          undefined,
          floorLearning(deps),
        );
        if (decided.floor) {
          log.info('rootfs floor learned at the decision', floorFields(decided.floor));
        }
        if (decided.floorError) {
          log.warn(
            'the rootfs floor could not be learned at the decision; the retirement learns it',
            {
              error: decided.floorError.message,
            },
          );
        }
        if (decided.error) {
          log.warn('the outcome could not be recorded at the decision; the workflow records it', {
            error: decided.error.message,
          });
        }
        return settleOutcome(outcome, input.pod, decided.failure);
      }
      // A change after the read above reaches this worker's decider, which completes by id.
      deps.decider.track({
        workflowId,
        sandboxId: input.sandboxId,
        pod: input.pod,
        ...(input.placement ? { placement: input.placement } : {}),
        ...(input.recordOutcome ? { recordOutcome: true, traceParent: activeSpanContext() } : {}),
      });
      log.info('waiting for the pod; the informers complete the wait');
      throw new CompleteAsyncError();
    },
  };
}

/**
 * The activity's result for a decided outcome: the IP, or the typed failure (logged): `failure`
 * when given (the outcome at the decision's), else the outcome's own.
 */
function settleOutcome(
  outcome: ReadinessOutcome,
  pod: PodRef,
  failure?: ApplicationFailure,
): AwaitPodReadyResult {
  if (outcome.outcome === 'ready') {
    log.info('pod ready', { pod_ip: outcome.podIp });
    return { podIp: outcome.podIp };
  }
  const line = readinessFailureLog(outcome);
  log[line.level](line.message, { ...line.fields, ...outcomeRecordedField(failure) });
  throw failure ?? readinessFailure(outcome, pod);
}
