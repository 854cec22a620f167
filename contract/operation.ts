/**
 * Operations: the phases a create or a delete moves through, and the one table that ties an
 * operation error code to the Temporal ApplicationFailure type the workflow fails with and to
 * the HTTP status the synchronous create answers with. Types, constants and pure functions
 * only, so the workflow bundle may import it.
 */

/**
 * An operation's status (a list can filter on it); `done` is every status but `running`. A
 * `succeeded` operation's `result` is what it produced when it ended (Google AIP-151), never
 * the sandbox as it is now: a create's sandbox `running` with its pod and IP (docs/api.md,
 * "Operations").
 */
export const OPERATION_STATUSES = ['running', 'succeeded', 'failed', 'cancelled'] as const;
/** An operation's status. */
export type OperationStatus = (typeof OPERATION_STATUSES)[number];

/** The operation types: a sandbox's create and its delete. */
export const OPERATION_TYPES = ['sandbox.create', 'sandbox.delete'] as const;
/** An operation type. */
export type OperationType = (typeof OPERATION_TYPES)[number];

/**
 * An operation's error as the API shows it: a stable code (an operation error code, or
 * `unavailable` when the workflow could not be started), a message a person can act on, and
 * details (camelCase; the API spells them in snake_case).
 */
export interface OperationErrorRecord {
  code: string;
  message: string;
  details: Record<string, unknown>;
}

/** The phases of a create (search attribute `CreatePhase`, operation `phase`). */
export const CREATE_PHASES = [
  'creating_pod',
  'waiting_for_ip',
  'compensating',
  'finished',
] as const;
/** A create's phase. */
export type CreatePhase = (typeof CREATE_PHASES)[number];

/** The phase of a running delete (a delete has no search attribute for its phase). */
export type DeletePhase = 'deleting';

/** An operation's phase: a create's, or a delete's. */
export type OperationPhase = CreatePhase | DeletePhase;

/** True when `value` is a create phase (e.g. a search attribute read back from Temporal). */
export function isCreatePhase(value: unknown): value is CreatePhase {
  return (CREATE_PHASES as readonly unknown[]).includes(value);
}

/**
 * Each operation error code (docs/api.md, "Errors"): the `ApplicationFailure` type the workflow
 * fails with (one type per class, created in src/workflows/create-sandbox.ts), and the HTTP status
 * the synchronous create route answers with when its workflow fails with that code.
 */
export const OPERATION_ERRORS = {
  /**
   * The request cannot work (a node or the apiserver refused it, e.g. a disk below the
   * template's root filesystem): the caller's error, and the service working as intended, so
   * `expected` (see {@link isExpectedFailure}).
   */
  invalid_request: { failureType: 'InvalidRequest', httpStatus: 400, expected: true },
  /** A ResourceQuota of the sandbox namespace refused the pod: capacity; retry later. */
  quota_exceeded: { failureType: 'QuotaExceeded', httpStatus: 429 },
  /**
   * The service cannot use the cluster (credentials refused past their bound, RBAC missing, a
   * kubeconfig that cannot work): an error of the installation, not of the request.
   */
  unavailable: { failureType: 'Unavailable', httpStatus: 503 },
  pod_never_ready: { failureType: 'PodNeverReady', httpStatus: 503 },
  /**
   * Every node tried refused the sandbox with one of its template's `replace_on` codes, and the
   * placements are used up or no node is left (docs/architecture.md, "Re-placement"): capacity,
   * not a bad request; retry later.
   */
  no_node_available: { failureType: 'NoNodeAvailable', httpStatus: 503 },
  pod_failed: { failureType: 'PodFailed', httpStatus: 500 },
  cancelled: { failureType: 'Cancelled', httpStatus: 500 },
  internal: { failureType: 'Internal', httpStatus: 500 },
} as const satisfies Record<
  string,
  { failureType: string; httpStatus: number; expected?: boolean }
>;

/** An operation error code. */
export type OperationErrorCode = keyof typeof OPERATION_ERRORS;

/**
 * Whether a failure with this code is an expected outcome (the caller's error): its failure is
 * a Temporal BENIGN ApplicationFailure (the SDK logs it at debug, no failure metrics), and the
 * worker logs it in one info line instead of warnings (docs/observability.md, "Logs").
 */
export function isExpectedFailure(code: OperationErrorCode): boolean {
  const row = OPERATION_ERRORS[code];
  return 'expected' in row && row.expected;
}

/**
 * The workflow log attribute that marks the lines after an expected failure (its value: the
 * operation error code); set by src/workflows/expected-failure-logs.ts, read by src/worker/runtime.ts.
 */
export const EXPECTED_FAILURE_LOG_ATTRIBUTE = 'expected_failure';

/** The operation error code of an `ApplicationFailure` type; `internal` when unknown. */
export function errorCodeOfFailureType(type: string | undefined | null): OperationErrorCode {
  const entry = Object.entries(OPERATION_ERRORS).find(([, row]) => row.failureType === type);
  return (entry?.[0] as OperationErrorCode | undefined) ?? 'internal';
}

/**
 * How a create got its pod (an operation's `details.path`): `warm`, claimed ready from its
 * template's warm pool (docs/architecture.md, "Warm pools"), or `cold`, made for it.
 */
export const CREATE_PATHS = ['warm', 'cold'] as const;
/** A create's path. */
export type CreatePath = (typeof CREATE_PATHS)[number];
