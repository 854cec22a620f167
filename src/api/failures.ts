/**
 * Reading a finished workflow's failure as an operation error (docs/api.md, and
 * docs/architecture.md, "Consistency between Temporal and the store"): the
 * workflow fails with an ApplicationFailure whose `type` is the error class (contract/operation.ts
 * maps it back to a code), whose message names the cause and whose first detail carries its
 * details. Cancellation, termination and timeouts have their own failure classes.
 */
import { WorkflowFailedError } from '@temporalio/client';
import {
  ApplicationFailure,
  CancelledFailure,
  TerminatedFailure,
  TimeoutFailure,
} from '@temporalio/common';
import { errorCodeOfFailureType, type OperationErrorCode } from '../../contract/index.js';

/** An operation's `error`; `details` keys are camelCase (src/api/wire.ts spells them for the API). */
export interface OperationError {
  code: OperationErrorCode;
  message: string;
  details: Record<string, unknown>;
}

/** The failure's first detail as an object (camelCase, as the workflow wrote it), `code` dropped. */
function detailsOf(failure: ApplicationFailure): Record<string, unknown> {
  const first: unknown = failure.details?.[0];
  if (first === null || typeof first !== 'object' || Array.isArray(first)) return {};
  const details: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(first)) {
    if (key !== 'code' && value !== undefined) details[key] = value;
  }
  return details;
}

/**
 * Turns the rejection of `handle.result()` into the operation's error.
 * - ApplicationFailure: code from its type (unknown types are `internal`), its message, details.
 * - CancelledFailure: `cancelled`. TerminatedFailure / TimeoutFailure / anything else: `internal`.
 */
export function operationErrorOf(err: unknown): OperationError {
  const cause = err instanceof WorkflowFailedError ? err.cause : err;
  if (cause instanceof ApplicationFailure) {
    return {
      code: errorCodeOfFailureType(cause.type),
      message: cause.message,
      details: detailsOf(cause),
    };
  }
  if (cause instanceof CancelledFailure) {
    return { code: 'cancelled', message: 'the operation was cancelled', details: {} };
  }
  if (cause instanceof TerminatedFailure) {
    return {
      code: 'internal',
      message: `the workflow was terminated${cause.message ? `: ${cause.message}` : ''}`,
      details: {},
    };
  }
  if (cause instanceof TimeoutFailure) {
    return { code: 'internal', message: 'the workflow timed out', details: {} };
  }
  const message = cause instanceof Error ? cause.message : String(cause);
  return { code: 'internal', message: `the workflow failed: ${message}`, details: {} };
}
