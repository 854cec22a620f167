/**
 * Re-placement (docs/architecture.md, "Re-placement"): the runtime shim's codes that say "this
 * node, not this request", how many placements a create may use, and one placement's record.
 * Types, constants and pure functions only, so the workflow bundle may import it.
 */

/**
 * The gRPC code names the runtime shim may put in its `[space-err=<Code>]` marker (gRPC's
 * status codes, `OK` left out).
 */
export const SHIM_CODES = [
  'Cancelled',
  'Unknown',
  'InvalidArgument',
  'DeadlineExceeded',
  'NotFound',
  'AlreadyExists',
  'PermissionDenied',
  'ResourceExhausted',
  'FailedPrecondition',
  'Aborted',
  'OutOfRange',
  'Unimplemented',
  'Internal',
  'Unavailable',
  'DataLoss',
  'Unauthenticated',
] as const;
/** A shim code. */
export type ShimCode = (typeof SHIM_CODES)[number];

/**
 * The code a template may never re-place on: the node refused the request itself (its disk),
 * which every node would refuse, so it ends the create at once (src/verdict/refusal.ts).
 */
export const REQUEST_REFUSAL_CODE = 'InvalidArgument' satisfies ShimCode;

/** Placements a create may use when its template names `replace_on` but no `max_placements`. */
export const DEFAULT_MAX_PLACEMENTS = 3;
/** The most placements a template may allow. */
export const MAX_PLACEMENTS_LIMIT = 10;

/**
 * A template's re-placement policy, as the workflow input carries it: the shim codes that mean
 * "try another node" and how many placements (pods on distinct nodes) a create may use, the
 * first included.
 */
export interface PlacementPolicy {
  replaceOn: ShimCode[];
  maxPlacements: number;
}

/**
 * One placement a node refused with a re-placement code: the node, the shim code, the node's
 * reason, when the refusal was recorded (ISO-8601; the event's lastTimestamp), and the pod.
 */
export interface PlacementRecord {
  placement: number;
  nodeName: string;
  code: string;
  reason: string;
  at: string;
  podName: string;
  podUid: string;
}

/**
 * What a readiness wait of a re-placing create also ends on (the workflow input's policy, per
 * placement): a refusal whose code is in `replaceOn`, and, from the second placement on, the
 * pod being unschedulable (no node its affinity allows is left).
 */
export interface WaitPlacement {
  replaceOn: string[];
  endOnUnschedulable: boolean;
}

/**
 * The ApplicationFailure types a re-placing readiness wait fails with; the workflow reads them
 * (they are not operation errors: it re-places, or ends `no_node_available`).
 */
export const PLACEMENT_FAILURE_TYPES = {
  /** The node refused with a code of `replace_on`; details {@link NodeRefusalDetails}. */
  nodeRefused: 'NodeRefused',
  /** No node the pod's affinity allows can take it; details carry the scheduler's message. */
  unschedulable: 'Unschedulable',
} as const;

/** Details of a `NodeRefused` failure: the refusal, its node and the pod. */
export interface NodeRefusalDetails {
  nodeName: string;
  code: string;
  reason: string;
  eventName: string;
  eventLastTimestamp?: string;
  podName: string;
  podUid: string;
}
