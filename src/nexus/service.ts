/**
 * The `sandbox` Nexus service's contract (docs/nexus.md): what a caller's workflow imports to
 * call it, and what the handler (src/nexus/sandbox-handler.ts) implements. Types and names only, so
 * a caller's workflow bundle can import it.
 */
import { ApplicationFailure, NexusOperationFailure } from '@temporalio/common';
import * as nexus from 'nexus-rpc';
import { OPERATION_ERRORS, type CreateSandboxResult } from '../../contract/index.js';
import type { DeleteSandboxResult } from '../../contract/index.js';

/**
 * Input of `sandbox.create`: the body of `POST /v1/sandboxes` (docs/api.md), validated the same
 * way. The tenant is not part of it: it comes from the operator's mapping of the caller's
 * namespace (NEXUS_TENANTS; docs/security.md, "Nexus callers").
 */
export interface NexusCreateInput {
  template: string;
  resources: {
    /** A Kubernetes CPU quantity: `1`, `0.5`, `"500m"`. */
    cpu: number | string;
    memory_mib: number;
    disk_mib: number;
  };
  /**
   * The sandbox's lifetime, counted from running, as AIP-142 spells a duration (`"3600s"`), with
   * the API's rules (docs/api.md, "Lifetimes"): above 0 s, at most the template's `max_ttl`.
   * Absent: the template's `default_ttl`, else no expiry.
   */
  ttl?: string;
  /** Labels, with the API's rules (docs/api.md, "Labels and filters"). */
  labels?: Record<string, string>;
}

/** Input of `sandbox.delete`: the id of a sandbox of the caller's tenant. */
export interface NexusDeleteInput {
  sandbox_id: string;
}

/** The Nexus service name callers address (`createNexusClient({ service: sandboxService })`). */
export const SANDBOX_SERVICE_NAME = 'sandbox';

/**
 * The `sandbox` service: `create` ends with the running sandbox (the `createSandbox` workflow's
 * result) or fails with the create's typed failure; `delete` ends when the sandbox is deleted.
 */
export const sandboxService = nexus.service(SANDBOX_SERVICE_NAME, {
  create: nexus.operation<NexusCreateInput, CreateSandboxResult>(),
  delete: nexus.operation<NexusDeleteInput, DeleteSandboxResult>(),
});

/**
 * The error code a caller reads from the ApplicationFailure under a failed operation: the
 * create's code for the workflow's failure types (`InvalidRequest` → `invalid_request`, as
 * contract/operation.ts), else the type itself (the handler's refusals use the API's codes:
 * `invalid_request`, `idempotency_conflict`, `not_found`, `already_done`).
 */
export function nexusFailureCode(type: string | undefined | null): string {
  const entry = Object.entries(OPERATION_ERRORS).find(([, row]) => row.failureType === type);
  return entry?.[0] ?? type ?? 'internal';
}

/**
 * The ApplicationFailure that says why a `sandbox` operation failed, from the error a caller's
 * `executeOperation` rejects with: the create's or delete's failure (under the
 * NexusOperationFailure), or a refusal of the handler before anything started (under the SDK's
 * `OperationError` wrapper). Its type goes to {@link nexusFailureCode}, its message is the API's.
 * @returns undefined for anything else (a cancellation, a timeout, a handler error)
 */
export function sandboxFailureOf(err: unknown): ApplicationFailure | undefined {
  let cause = err instanceof NexusOperationFailure ? err.cause : undefined;
  while (
    cause instanceof ApplicationFailure &&
    cause.type === 'OperationError' &&
    cause.cause instanceof ApplicationFailure
  ) {
    cause = cause.cause;
  }
  return cause instanceof ApplicationFailure ? cause : undefined;
}
