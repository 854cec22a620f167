/**
 * The create workflow's input and result, shared by the API (which starts it) and the
 * activities. Types and constants only: safe in the deterministic workflow bundle.
 */

/** Sandbox resources: cpu in cores, sizes in MiB. */
export interface SandboxResources {
  cpu: number;
  memory_mib: number;
  disk_mib: number;
}

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
  /** The create's deadline, in ms from the workflow's start (CREATE_DEADLINE_MS, or SYNC_READINESS_BUDGET_MS for a synchronous create). */
  deadlineMs: number;
}

/** Result of a successful `createSandbox` workflow. */
export interface CreateSandboxResult {
  sandboxId: string;
  pod: { name: string; uid: string; ip: string };
}

/** The phases a create moves through (search attribute `CreatePhase`, operation `phase`). */
export type CreatePhase = 'creating_pod' | 'waiting_for_ip' | 'compensating' | 'finished';

/** Operation error codes (design.md section 3). */
export type OperationErrorCode =
  'invalid_request' | 'pod_never_ready' | 'pod_failed' | 'cancelled' | 'internal';

/**
 * Each operation error code and the `ApplicationFailure` type the workflow fails with (one type
 * per class, so the API maps failures back with this table).
 */
export const FAILURE_TYPES: Record<OperationErrorCode, string> = {
  invalid_request: 'InvalidRequest',
  pod_never_ready: 'PodNeverReady',
  pod_failed: 'PodFailed',
  cancelled: 'Cancelled',
  internal: 'Internal',
};

/** The operation error code of an `ApplicationFailure` type, `internal` when unknown. */
export function errorCodeOfFailureType(type: string | undefined | null): OperationErrorCode {
  const entry = Object.entries(FAILURE_TYPES).find(([, failureType]) => failureType === type);
  return (entry?.[0] as OperationErrorCode | undefined) ?? 'internal';
}

/** Details attached to the workflow's final failure (first element of `details`). */
export interface CreateFailureDetails {
  code: OperationErrorCode;
  /** The node's reason, for `invalid_request`. */
  reason?: string;
  podName?: string;
  podUid?: string;
  /** For `invalid_request`: the refusal event's name and lastTimestamp (ISO-8601). */
  eventName?: string;
  eventLastTimestamp?: string;
}
