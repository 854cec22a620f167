/**
 * The `createSandbox` workflow's input, result and failure details, shared by the API (which
 * starts it), the workflow and its activities. Types only.
 */
import type { OperationErrorCode } from './operation.js';
import type { PlacementPolicy, PlacementRecord } from './placement.js';
import type { SandboxResources } from './sandbox.js';
import type { LearnedRootfsFloor } from './template.js';

/** Input of the `createSandbox` workflow. The workflow id is `operationId`. */
export interface CreateSandboxInput {
  operationId: string;
  sandboxId: string;
  tenantId: string;
  template: string;
  /** Container image resolved from the template catalog when the create was accepted. */
  image: string;
  resources: SandboxResources;
  /** Sandbox generation and activation attempt; together they fence the store writes. */
  generation: number;
  attempt: number;
  /**
   * The create's deadline, a duration in ms from the workflow's start, chosen once by the
   * route that accepted the create (CREATE_DEADLINE_MS, or SYNC_READINESS_BUDGET_MS for the
   * synchronous route).
   */
  deadlineMs: number;
  /**
   * The custom search attributes the Temporal namespace had registered when the create was
   * accepted (names); the workflow upserts only these. Absent: all of them.
   */
  searchAttributes?: string[];
  /**
   * The template's re-placement policy when it names `replace_on` (docs/architecture.md,
   * "Re-placement"), resolved when the create was accepted. Absent: one placement, as before.
   */
  placement?: PlacementPolicy;
  /**
   * True when the template had a warm pool whose resources equal this create's when it was
   * accepted (docs/architecture.md, "Warm pools"): the create first tries to claim one of its
   * pods. Only a hint: the worker claims only what its own catalog's pool allows. Absent: cold.
   */
  warmPool?: boolean;
  /**
   * The sandbox's labels when it was accepted (docs/api.md, "Labels and filters"), which the
   * result repeats. Absent: none, or an input from before labels reached the workflow.
   */
  labels?: Record<string, string>;
  /**
   * The sandbox's lifetime when it was accepted, as AIP-142 spells a duration (`"3600s"`): the
   * request's `ttl`, else the template's `default_ttl` (docs/api.md, "Lifetimes"). The result
   * repeats it. Absent: no expiry, or an input from before lifetimes reached the workflow.
   */
  ttl?: string;
}

/**
 * The pod of a running sandbox: name, uid, and the IP it was given. Nested under `pod`, the
 * IP is `ip` (as in the API's Sandbox JSON); a flat field is `podIp`.
 */
export interface SandboxPod {
  name: string;
  uid: string;
  ip: string;
}

/**
 * Result of a successful `createSandbox` workflow, which is also the `sandbox.create` Nexus
 * operation's result (src/nexus/service.ts): a contract, so fields are only ever added.
 */
export interface CreateSandboxResult {
  sandboxId: string;
  pod: SandboxPod;
  /** The labels the sandbox was created with (its input's); absent: none. */
  labels?: Record<string, string>;
  /** Its lifetime (`"3600s"`, counted from running), as its input had it; absent: no expiry. */
  ttl?: string;
}

/** Details attached to the workflow's final failure (first element of `details`). */
export interface CreateFailureDetails {
  code: OperationErrorCode;
  /** The node's reason, for `invalid_request`; the pod's, for `pod_failed`. */
  reason?: string;
  podName?: string;
  podUid?: string;
  /** For `invalid_request`: the refusal event's name and lastTimestamp (ISO-8601). */
  eventName?: string;
  eventLastTimestamp?: string;
  /** For `invalid_request` from a node refusal: the node that refused (the event's source host). */
  nodeName?: string;
  /**
   * For `invalid_request` from a node refusal whose reason states the cloned rootfs size: that
   * size in MiB, the image's rootfs floor (src/verdict/refusal.ts, `parseRootfsFloor`).
   */
  rootfsMib?: number;
  /**
   * False when the create is known never to have made a pod (the apiserver refused every
   * attempt with a definite answer, src/activities/create-attempts.ts): compensation then has no
   * pod to look for.
   */
  podCreated?: boolean;
  /** For `no_node_available`: every placement a node refused, oldest first. */
  placements?: PlacementRecord[];
  /**
   * Set on a readiness wait's failure only, by whoever decided it (the readiness decider or the
   * wait activity) when it recorded this very outcome on the operation first ("The outcome at
   * the decision", docs/architecture.md): the workflow then writes no outcome of its own. Never
   * part of the operation's error ({@link operationErrorOf} drops it).
   */
  outcomeRecorded?: boolean;
}

/**
 * The operation's error (contract/operation.ts `OperationErrorRecord`) of a create that ended
 * with `details` and `message`: `details` without `code`, `outcomeRecorded` and undefined
 * values. Pure: the workflow (its own outcome) and the readiness decider (the outcome at the
 * decision) write the same error for the same failure.
 */
export function operationErrorOf(
  message: string,
  details: CreateFailureDetails,
): { code: OperationErrorCode; message: string; details: Record<string, unknown> } {
  const shown: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(details)) {
    if (key !== 'code' && key !== 'outcomeRecorded' && value !== undefined) shown[key] = value;
  }
  return { code: details.code, message, details: shown };
}

/**
 * The ApplicationFailure type of a create or delete the worker refused to carry out because the
 * store does not hold what its input claims (src/activities/admission.ts; docs/security.md, "What
 * the worker trusts"): non-retryable, and raised before any pod or store write.
 */
export const NOT_ADMITTED_FAILURE_TYPE = 'NotAdmitted';

/**
 * What a create refused by a node teaches about its image (docs/architecture.md, "Rootfs
 * floors"): the stated rootfs size in MiB and the evidence; `eventAt` is the refusal event's
 * lastTimestamp (ISO-8601), when it had one.
 */
export type RootfsFloorEvidence = Omit<LearnedRootfsFloor, 'learnedAtMs' | 'operationId'> & {
  eventAt?: string;
};

/**
 * Whether a failure with `details` teaches a rootfs floor ({@link rootfsFloorEvidenceOf}): an
 * `invalid_request` naming its refusal event and a stated size.
 */
export function teachesRootfsFloor(
  details: Partial<CreateFailureDetails>,
): details is Partial<CreateFailureDetails> & { rootfsMib: number } {
  return (
    details.code === 'invalid_request' && !!details.eventName && details.rootfsMib !== undefined
  );
}

/**
 * The rootfs floor a failed create teaches: only an `invalid_request` from a node's decisive
 * refusal (its `details` name the refusal event) whose reason stated the cloned rootfs size.
 * Pure: the workflow (handing it to the retirement) and the decision
 * (src/verdict/outcome-at-decision.ts) learn the same floor from the same failure.
 * @param create the image the pod ran, the template and the tenant of the create
 * @returns undefined for any other failure
 */
export function rootfsFloorEvidenceOf(
  details: Partial<CreateFailureDetails>,
  message: string,
  create: { image: string; template: string; tenantId: string },
): RootfsFloorEvidence | undefined {
  if (!teachesRootfsFloor(details)) return undefined;
  const { rootfsMib, nodeName, eventLastTimestamp, reason } = details;
  return {
    image: create.image,
    template: create.template,
    rootfsMib,
    tenantId: create.tenantId,
    nodeName: nodeName ?? null,
    reason: reason ?? message,
    eventAt: eventLastTimestamp,
  };
}
