/**
 * Kubernetes steps of the create: create (or adopt) the pod, wait for it (src/verdict/readiness-wait.ts),
 * delete it.
 */
import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import {
  classifyApiserverError,
  PERMISSION_BOUND_MS,
  UNAUTHORIZED_BOUND_MS,
  quotaRefusalWithoutUsage,
  type ApiserverError,
} from '../kubernetes/apiserver-errors.js';
import type { KubernetesClient } from '../kubernetes/client.js';
import type { WarmPodInformer } from '../kubernetes/warm-pod-informer.js';
import { findClaimedPod } from '../kubernetes/warm-pods.js';
import {
  createPod,
  deletePod,
  findSandboxPod,
  PodNameTakenError,
  type PodRef,
} from '../kubernetes/pods.js';
import type { SandboxInformers } from '../kubernetes/sandbox-informers.js';
import type { TemplateConfig } from '../config/index.js';
import { podSettingsOf } from '../config/pod-settings.js';
import { catalogTemplate } from './admission.js';
import type { Store } from '../store/index.js';
import { createFailure } from '../verdict/create-failure.js';
import { readinessWaitActivities } from '../verdict/readiness-wait.js';
import {
  earlierAttemptsRefused,
  isDefiniteRefusal,
  recordRefusedAttempt,
} from './create-attempts.js';
import type { ReadinessDecider } from '../verdict/readiness-decider.js';
import type { CreateMetrics } from './metrics.js';
import {
  isExpectedFailure,
  type CreateFailureDetails,
  type OperationErrorCode,
  type SandboxResources,
} from '../../contract/index.js';

/** Dependencies of the pod activities. */
export interface PodActivityDeps {
  kubernetes: KubernetesClient;
  store: Store;
  /**
   * The worker's own template catalog (SANDBOX_TEMPLATES): every pod's image and settings come
   * from here, never from the workflow's input (docs/security.md, "What the worker trusts").
   * Read at each create, so a test may change it between creates.
   */
  templates: Record<string, TemplateConfig>;
  /**
   * The worker's pods and events informers (one pair per process, started by the worker);
   * every readiness wait reads them instead of opening watches of its own.
   */
  informers: SandboxInformers;
  /**
   * The worker's decider of readiness waits (src/verdict/readiness-decider.ts), over the same
   * informers: it completes the waits this activity leaves asynchronous.
   */
  decider: ReadinessDecider;
  /** Create and watch metrics (src/activities/metrics.ts); optional. */
  metrics?: CreateMetrics;
  /** The worker's informer of warm pool pods, when its catalog has a pool (src/activities/warm-pool-pods.ts). */
  warmPods?: WarmPodInformer;
  /**
   * How long `createPod` retries a refusal of the service's account before it ends the create
   * `unavailable`, in ms, from the step's first schedule: 401 (default UNAUTHORIZED_BOUND_MS)
   * and RBAC 403 (default PERMISSION_BOUND_MS; src/kubernetes/apiserver-errors.ts says why). A
   * compensation's `deletePod` (`leaveToSweeper`) retries them as long before it stops.
   */
  refusalBoundsMs?: Partial<RefusalBoundsMs>;
}

/** The bounds of {@link PodActivityDeps.refusalBoundsMs}, in ms. */
export interface RefusalBoundsMs {
  unauthorized: number;
  permission: number;
}

/** Input of `createPod`. Sizes in MiB. */
export interface CreatePodInput {
  operationId: string;
  sandboxId: string;
  generation: number;
  attempt: number;
  template: string;
  /**
   * The image the API resolved when it accepted the create. Not used: the pod's image is the
   * template's in the worker's catalog (a differing one is logged).
   */
  image: string;
  resources: SandboxResources;
  /** Which placement of the generation (1-based; absent: 1, the only one before re-placement). */
  placement?: number;
  /** Nodes that refused earlier placements: the pod's required affinity keeps it off them. */
  avoidNodes?: string[];
  /**
   * A re-placing create's `replace_on` codes: annotated on the pod, where every worker's decider
   * reads what ends its wait (src/verdict/pod-wait.ts). Absent: the create does not re-place.
   */
  replaceOn?: string[];
}

/** Builds the pod activities over their dependencies. */
export function podActivities(deps: PodActivityDeps) {
  return {
    // The readiness wait, `awaitPodReady`: the verdict's room holds it (src/verdict/readiness-wait.ts).
    ...readinessWaitActivities(deps),
    /** Creates the sandbox pod and records it: {@link createPodStep}. */
    createPod: (input: CreatePodInput) => createPodStep(deps, input),
    /** Deletes the sandbox pod (a create's compensation, a delete): {@link deletePodStep}. */
    deletePod: (input: DeletePodInput) => deletePodStep(deps, input),
  };
}

/**
 * Creates the sandbox pod (or adopts the one an earlier attempt created) and records its
 * name and uid on the sandbox. The pod's image and isolation settings are the template's in
 * the worker's catalog ({@link PodActivityDeps.templates}), not the input's.
 * @returns the pod, with the image it runs
 * @throws ApplicationFailure `NotAdmitted` (non-retryable) when the catalog has no such
 *   template
 * @throws ApplicationFailure `PodNameTaken` (non-retryable) when another pod owns the name
 * @throws ApplicationFailure (non-retryable) typed by the apiserver's answer
 *   (src/kubernetes/apiserver-errors.ts): `InvalidRequest` for a permanent refusal, `QuotaExceeded`
 *   for a quota, `Unavailable` for a kubeconfig that cannot work, or an RBAC 403 or a 401
 *   that lasted past its bound ({@link PodActivityDeps.refusalBoundsMs}); details
 *   {@link CreateFailureDetails} with `podCreated: false` when every attempt got a definite
 *   refusal, so none can have made the pod (src/activities/create-attempts.ts)
 * @throws the client's error for transient answers (Temporal retries the step)
 */
export async function createPodStep(
  deps: PodActivityDeps,
  input: CreatePodInput,
): Promise<PodRef & { image: string }> {
  const template = catalogTemplate(deps.templates, input.template, input.sandboxId);
  if (input.image !== template.image) {
    log.warn("the workflow names another image than the worker's catalog; the catalog's runs", {
      template: input.template,
      image: template.image,
      workflow_image: input.image,
    });
  }
  // The tenant the pod is labelled with is the store's (the admission step checked the
  // input's against it), not a field of the workflow's input.
  const tenant = (await deps.store.getSandboxById(input.sandboxId))?.tenant;
  let pod: PodRef & { adopted: boolean };
  try {
    pod = await createPod(deps.kubernetes, {
      operationId: input.operationId,
      tenant,
      sandboxId: input.sandboxId,
      generation: input.generation,
      template: input.template,
      image: template.image,
      resources: input.resources,
      placement: input.placement,
      avoidNodes: input.avoidNodes,
      ...(input.replaceOn ? { replaceOn: input.replaceOn } : {}),
      settings: podSettingsOf(template),
    });
  } catch (err) {
    if (err instanceof PodNameTakenError) {
      throw ApplicationFailure.nonRetryable(err.message, 'PodNameTaken');
    }
    throw createPodFailure(err, resolvedBounds(deps.refusalBoundsMs));
  }
  await deps.store.recordPod({
    sandboxId: input.sandboxId,
    generation: input.generation,
    attempt: input.attempt,
    podName: pod.name,
    podUid: pod.uid,
    operationId: input.operationId,
    runId: Context.current().info.workflowExecution?.runId,
    createPath: 'cold',
  });
  log.info('pod created', { pod_name: pod.name, pod_uid: pod.uid, adopted: pod.adopted });
  return {
    name: pod.name,
    uid: pod.uid,
    resourceVersion: pod.resourceVersion,
    image: template.image,
  };
}

/** The input of {@link deletePodStep}. */
export interface DeletePodInput {
  operationId: string;
  sandboxId: string;
  generation?: number;
  /** The placement whose pod is looked up by name when `pod` is absent (default 1). */
  placement?: number;
  pod?: PodRef;
  /**
   * The template whose warm pool the pod was claimed from, when `pod` is absent: the pod is
   * looked up by the sandbox id label (a claim cut short; src/kubernetes/warm-pods.ts).
   */
  claimedFrom?: string;
  /** Stop at a lasting refusal of the service's account and leave the pod to the sweeper. */
  leaveToSweeper?: boolean;
}

/**
 * Deletes the sandbox pod with a uid precondition; absent counts as done, a newer pod of
 * the same name is left alone. Without `pod` (the create never learned its uid), the pod is
 * looked up by its deterministic name and deleted only if it carries this sandbox id and
 * generation.
 *
 * With `leaveToSweeper` (a create's compensation), a refusal of the service's account (RBAC
 * 403, 401) that has lasted its bound ({@link PodActivityDeps.refusalBoundsMs}) since the
 * step was first scheduled ends the step instead of being retried for ever: the pod is left
 * to the orphan sweeper (src/worker/orphan-sweeper.ts), which deletes any pod of a `failed`
 * sandbox once the grant is back, and the create goes on to retire its execution.
 * @returns what happened: `deleted`, `absent`, `replaced` or `left_to_sweeper`
 * @throws the client's error otherwise (Temporal retries the step)
 */
export async function deletePodStep(deps: PodActivityDeps, input: DeletePodInput): Promise<string> {
  let pod: PodRef | undefined;
  let outcome: string;
  try {
    pod =
      input.pod ??
      (input.generation === undefined
        ? undefined
        : input.claimedFrom !== undefined
          ? await findClaimedPod(deps.kubernetes, {
              sandboxId: input.sandboxId,
              generation: input.generation,
              template: input.claimedFrom,
            })
          : await findSandboxPod(
              deps.kubernetes,
              input.sandboxId,
              input.generation,
              input.placement ?? 1,
            ));
    outcome = pod ? await deletePod(deps.kubernetes, pod) : 'absent';
  } catch (err) {
    // Compensation must succeed: every class is retried by Temporal, each attempt logged.
    const answer = classifyApiserverError(err);
    if (input.leaveToSweeper && refusalOutlasted(answer, deps.refusalBoundsMs)) {
      log.warn('pod delete refused past its bound; the orphan sweeper deletes the pod', {
        error_class: answer.kind,
        status: answer.status,
        reason: answer.message,
        pod_name: pod?.name,
        pod_uid: pod?.uid,
      });
      deps.metrics?.podsLeftToSweeper.inc({ error_class: answer.kind });
      return 'left_to_sweeper';
    }
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
}

/**
 * Whether `answer` is a refusal of the service's account (401, RBAC 403) that has lasted its
 * bound since the current step was first scheduled.
 */
function refusalOutlasted(answer: ApiserverError, bounds?: Partial<RefusalBoundsMs>): boolean {
  const boundsMs = resolvedBounds(bounds);
  if (answer.kind !== 'unauthorized' && answer.kind !== 'permission') return false;
  return Date.now() - Context.current().info.scheduledTimestampMs >= boundsMs[answer.kind];
}

/** The refusal bounds with their defaults, in ms. */
function resolvedBounds(bounds?: Partial<RefusalBoundsMs>): RefusalBoundsMs {
  return {
    unauthorized: bounds?.unauthorized ?? UNAUTHORIZED_BOUND_MS,
    permission: bounds?.permission ?? PERMISSION_BOUND_MS,
  };
}

/** The error code each apiserver error class ends a create with; undefined: retried. */
const CREATE_ERROR_CODE: Record<ApiserverError['kind'], OperationErrorCode | undefined> = {
  refused: 'invalid_request',
  quota: 'quota_exceeded',
  permission: undefined, // until its bound, then `unavailable`
  configuration: 'unavailable',
  unauthorized: undefined, // until its bound, then `unavailable`
  transient: undefined,
};

/**
 * What `createPod` throws for an error of the apiserver call (src/kubernetes/apiserver-errors.ts):
 * the error itself when retrying may help, else a non-retryable ApplicationFailure typed by the
 * error table whose message quotes the apiserver ("the apiserver refused the pod: …"). A 401 or
 * an RBAC 403 is retried until it has lasted `boundsMs` of its class since the step was first
 * scheduled (a freshly started kube-apiserver answers RBAC 403 until its caches have synced).
 */
function createPodFailure(err: unknown, boundsMs: RefusalBoundsMs): unknown {
  const info = Context.current().info;
  const answer = classifyApiserverError(err);
  const retriedForMs = Date.now() - info.scheduledTimestampMs;
  const boundMs =
    answer.kind === 'unauthorized' || answer.kind === 'permission'
      ? boundsMs[answer.kind]
      : undefined;
  const code =
    CREATE_ERROR_CODE[answer.kind] ??
    (boundMs !== undefined && retriedForMs >= boundMs ? 'unavailable' : undefined);
  // Every attempt so far refused definitely (src/activities/create-attempts.ts): no pod was made.
  const noPodMade = earlierAttemptsRefused(info) && isDefiniteRefusal(answer);
  if (!code) {
    log.warn('pod create failed; retrying', {
      error_class: answer.kind,
      status: answer.status,
      reason: answer.message,
    });
    if (noPodMade) recordRefusedAttempt();
    return err;
  }
  // A quota's own message carries the namespace's usage (every tenant's): the tenant gets
  // what it asked for only; the log below keeps the whole message for the operator.
  const shown = answer.kind === 'quota' ? quotaRefusalWithoutUsage(answer.message) : answer.message;
  const message = createRefusalMessage({ ...answer, message: shown }, boundsMs);
  // A refusal of the request itself (e.g. a LimitRange) is the caller's error: info, not warn.
  log[isExpectedFailure(code) ? 'info' : 'warn']('pod create refused', {
    status: answer.status,
    reason: answer.message,
    code,
  });
  const details: CreateFailureDetails = {
    code,
    reason: shown,
    // Unless every attempt was refused definitely, an earlier one may have made the pod.
    podCreated: noPodMade ? false : undefined,
  };
  return createFailure(message, details);
}

/** The message of a create the apiserver (or the client's configuration) ended. */
function createRefusalMessage(answer: ApiserverError, boundsMs: RefusalBoundsMs): string {
  switch (answer.kind) {
    case 'quota':
      return `the apiserver refused the pod: a resource quota is exhausted: ${answer.message}`;
    case 'permission':
      return (
        `the service account may not create pods (deploy/rbac.yaml is not applied?), refused ` +
        `for over ${boundsMs.permission / 1000} s: ${answer.message}`
      );
    case 'configuration':
      return `the kubeconfig cannot work: ${answer.message}`;
    case 'unauthorized':
      return (
        `the apiserver has refused the service's credentials for over ` +
        `${boundsMs.unauthorized / 1000} s: ${answer.message}`
      );
    default:
      return `the apiserver refused the pod: ${answer.message}`;
  }
}
