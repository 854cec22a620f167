/**
 * Kubernetes steps of the create: create (or adopt) the pod, wait for it, delete it.
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  classifyApiserverError,
  UNAUTHORIZED_BOUND_MS,
  type ApiserverError,
} from '../kubernetes/apiserver-errors.js';
import type { KubernetesClient } from '../kubernetes/client.js';
import {
  createPod,
  deletePod,
  findSandboxPod,
  PodNameTakenError,
  type PodRef,
} from '../kubernetes/pods.js';
import { awaitPodReady, type ReadinessOutcome } from '../kubernetes/readiness-watch.js';
import { parseRootfsFloor } from '../kubernetes/refusal.js';
import type { SandboxInformers } from '../kubernetes/sandbox-informers.js';
import type { Store } from '../store/index.js';
import { whileHeartbeating } from './heartbeat.js';
import type { CreateMetrics } from './metrics.js';
import {
  OPERATION_ERRORS,
  type CreateFailureDetails,
  type OperationErrorCode,
  type SandboxResources,
} from '../contract/index.js';

/** Dependencies of the pod activities. */
export interface PodActivityDeps {
  kubernetes: KubernetesClient;
  store: Store;
  /**
   * The worker's pods and events informers (one pair per process, started by the worker);
   * every readiness wait reads them instead of opening watches of its own.
   */
  informers: SandboxInformers;
  /** How often the readiness wait heartbeats, in ms (default HEARTBEAT_INTERVAL_MS, 1000). */
  heartbeatIntervalMs?: number;
  /** Create and watch metrics (activities/metrics.ts); optional. */
  metrics?: CreateMetrics;
}

/** Input of `createPod`. Sizes in MiB. */
export interface CreatePodInput {
  operationId: string;
  sandboxId: string;
  generation: number;
  attempt: number;
  template: string;
  image: string;
  resources: SandboxResources;
}

/** Input of `awaitPodReady`. It has no deadline: the workflow's deadline timer cancels it. */
export interface AwaitPodReadyInput {
  operationId: string;
  sandboxId: string;
  pod: PodRef;
}

/** Result of `awaitPodReady`: the pod's IP. */
export interface AwaitPodReadyResult {
  podIp: string;
}

/** Builds the pod activities over their dependencies. */
export function podActivities(deps: PodActivityDeps) {
  return {
    /**
     * Creates the sandbox pod (or adopts the one an earlier attempt created) and records its
     * name and uid on the sandbox.
     * @throws ApplicationFailure `PodNameTaken` (non-retryable) when another pod owns the name
     * @throws ApplicationFailure (non-retryable) typed by the apiserver's answer
     *   (kubernetes/apiserver-errors.ts): `InvalidRequest` for a permanent refusal, `QuotaExceeded`
     *   for a quota, `Unavailable` for RBAC, a kubeconfig that cannot work, or a 401 that lasted
     *   past UNAUTHORIZED_BOUND_MS; details {@link CreateFailureDetails} with `podCreated: false`
     *   when no earlier attempt can have made the pod
     * @throws the client's error for transient answers (Temporal retries the step)
     */
    async createPod(input: CreatePodInput): Promise<PodRef> {
      let pod: PodRef & { adopted: boolean };
      try {
        pod = await createPod(deps.kubernetes, {
          sandboxId: input.sandboxId,
          generation: input.generation,
          template: input.template,
          image: input.image,
          resources: input.resources,
        });
      } catch (err) {
        if (err instanceof PodNameTakenError) {
          throw ApplicationFailure.nonRetryable(err.message, 'PodNameTaken');
        }
        throw createPodFailure(err);
      }
      await deps.store.recordPod({
        sandboxId: input.sandboxId,
        generation: input.generation,
        attempt: input.attempt,
        podName: pod.name,
        podUid: pod.uid,
        operationId: input.operationId,
        runId: Context.current().info.workflowExecution?.runId,
      });
      log.info('pod created', { pod_name: pod.name, pod_uid: pod.uid, adopted: pod.adopted });
      return { name: pod.name, uid: pod.uid, resourceVersion: pod.resourceVersion };
    },

    /**
     * Waits for the pod through the worker's informers (kubernetes/readiness-watch.ts) while
     * heartbeating; the activity's cancellation (the workflow's deadline timer, or a cancel)
     * ends the wait.
     * @returns the pod IP
     * @throws ApplicationFailure `InvalidRequest` (non-retryable) when the node refused the pod
     *   as invalid; its message names the node's reason and its details are
     *   {@link CreateFailureDetails} with the refusal event's name and time
     * @throws ApplicationFailure `PodFailed` (non-retryable) when the pod failed, vanished or
     *   is being deleted
     * @throws ApplicationFailure `Internal` (non-retryable) when the worker may not watch pods
     *   (403, or 401 for longer than its bound): its message names the missing permission
     * @throws CancelledFailure when the activity was cancelled
     */
    async awaitPodReady(input: AwaitPodReadyInput): Promise<AwaitPodReadyResult> {
      const { cancellationSignal } = Context.current();
      const watch = awaitPodReady({
        informers: deps.informers,
        pod: input.pod,
        signal: cancellationSignal,
      });
      let outcome: ReadinessOutcome;
      try {
        outcome = await whileHeartbeating(watch, deps.heartbeatIntervalMs);
      } catch (err) {
        if (!cancellationSignal.aborted) throw err;
        log.info('readiness wait cancelled');
        // The SDK turns this into a CancelledFailure for the workflow.
        throw cancellationSignal.reason ?? err;
      }
      if (outcome.outcome === 'ready') {
        log.info('pod ready', { pod_ip: outcome.podIp });
        return { podIp: outcome.podIp };
      }
      throw readinessFailure(outcome, input.pod);
    },

    /**
     * Deletes the sandbox pod with a uid precondition; absent counts as done, a newer pod of
     * the same name is left alone. Without `pod` (the create never learned its uid), the pod is
     * looked up by its deterministic name and deleted only if it carries this sandbox id and
     * generation.
     * @returns what happened: `deleted`, `absent` or `replaced`
     */
    async deletePod(input: {
      operationId: string;
      sandboxId: string;
      generation?: number;
      pod?: PodRef;
    }): Promise<string> {
      let pod: PodRef | undefined;
      let outcome: string;
      try {
        pod =
          input.pod ??
          (input.generation === undefined
            ? undefined
            : await findSandboxPod(deps.kubernetes, input.sandboxId, input.generation));
        outcome = pod ? await deletePod(deps.kubernetes, pod) : 'absent';
      } catch (err) {
        // Compensation must succeed: every class is retried by Temporal, each attempt logged.
        const answer = classifyApiserverError(err);
        log.warn('pod delete failed; retrying', {
          error_class: answer.kind,
          status: answer.status,
          reason: answer.message,
        });
        throw err;
      }
      // The pod may have been found by name: its uid is logged explicitly.
      log.info('pod deleted (compensation)', { pod_uid: pod?.uid, outcome });
      return outcome;
    },
  };
}

/**
 * The non-retryable ApplicationFailure of a readiness wait that ended without an IP: typed by
 * contract/operation.ts's table, details as {@link CreateFailureDetails}. Logs why.
 */
function readinessFailure(
  outcome: Exclude<ReadinessOutcome, { outcome: 'ready' }>,
  pod: PodRef,
): ApplicationFailure {
  const podFields = { podName: pod.name, podUid: pod.uid };
  if (outcome.outcome === 'refused') {
    log.warn('node refused the pod as invalid', {
      reason: outcome.reason,
      event: outcome.eventName,
    });
    const details: CreateFailureDetails = {
      code: 'invalid_request',
      reason: outcome.reason,
      ...podFields,
      eventName: outcome.eventName,
      eventLastTimestamp: outcome.eventLastTimestamp,
      nodeName: outcome.nodeName,
      rootfsMib: parseRootfsFloor(outcome.reason),
    };
    return createFailure(`the node refused the sandbox: ${outcome.reason}`, details);
  }
  if (outcome.outcome === 'watchRefused') {
    // The worker cannot see the pod (RBAC, or credentials refused past their bound): a
    // configuration problem, `unavailable` like the apiserver's other configuration refusals.
    log.error('the worker cannot watch pods; the create ends', { reason: outcome.reason });
    const details: CreateFailureDetails = {
      code: 'unavailable',
      reason: outcome.reason,
      ...podFields,
    };
    return createFailure(outcome.reason, details);
  }
  log.warn('pod failed before it had an IP', { reason: outcome.reason });
  const details: CreateFailureDetails = {
    code: 'pod_failed',
    reason: outcome.reason,
    ...podFields,
  };
  return createFailure(outcome.reason, details);
}

/** The error code each apiserver error class ends a create with; undefined: retried. */
const CREATE_ERROR_CODE: Record<ApiserverError['kind'], OperationErrorCode | undefined> = {
  refused: 'invalid_request',
  quota: 'quota_exceeded',
  permission: 'unavailable',
  configuration: 'unavailable',
  unauthorized: undefined, // until UNAUTHORIZED_BOUND_MS, then `unavailable`
  transient: undefined,
};

/**
 * What `createPod` throws for an error of the apiserver call (kubernetes/apiserver-errors.ts):
 * the error itself when retrying may help, else a non-retryable ApplicationFailure typed by the
 * error table whose message quotes the apiserver ("the apiserver refused the pod: …").
 */
function createPodFailure(err: unknown): unknown {
  const info = Context.current().info;
  const answer = classifyApiserverError(err);
  const unauthorizedForMs = Date.now() - info.scheduledTimestampMs;
  const code =
    CREATE_ERROR_CODE[answer.kind] ??
    (answer.kind === 'unauthorized' && unauthorizedForMs >= UNAUTHORIZED_BOUND_MS
      ? 'unavailable'
      : undefined);
  if (!code) {
    log.warn('pod create failed; retrying', { status: answer.status, reason: answer.message });
    return err;
  }
  const message = createRefusalMessage(answer);
  log.warn('pod create refused', { status: answer.status, reason: answer.message, code });
  const details: CreateFailureDetails = {
    code,
    reason: answer.message,
    // An earlier attempt may have made the pod before this one was refused.
    podCreated: info.attempt === 1 ? false : undefined,
  };
  return createFailure(message, details);
}

/**
 * A create's non-retryable failure: the ApplicationFailure type is the one contract/operation.ts
 * gives `details.code`, so the type and the code cannot disagree.
 */
function createFailure(message: string, details: CreateFailureDetails): ApplicationFailure {
  return ApplicationFailure.nonRetryable(
    message,
    OPERATION_ERRORS[details.code].failureType,
    details,
  );
}

/** The message of a create the apiserver (or the client's configuration) ended. */
function createRefusalMessage(answer: ApiserverError): string {
  switch (answer.kind) {
    case 'quota':
      return `the apiserver refused the pod: a resource quota is exhausted: ${answer.message}`;
    case 'permission':
      return (
        `the service account may not create pods (deploy/rbac.yaml is not applied?): ` +
        answer.message
      );
    case 'configuration':
      return `the kubeconfig cannot work: ${answer.message}`;
    case 'unauthorized':
      return (
        `the apiserver has refused the service's credentials for over ` +
        `${UNAUTHORIZED_BOUND_MS / 1000} s: ${answer.message}`
      );
    default:
      return `the apiserver refused the pod: ${answer.message}`;
  }
}
