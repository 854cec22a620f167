/**
 * The `deleteSandbox` workflow's input and result (src/workflows/delete-sandbox.ts), shared by the
 * API and the lifetime activity (which start it: src/temporal/delete-workflow.ts), the workflow and
 * Nexus callers. Types only.
 */

/** Input of the `deleteSandbox` workflow. The workflow id is `operationId`. */
export interface DeleteSandboxInput {
  operationId: string;
  sandboxId: string;
  tenantId: string;
  /** The execution to retire: the sandbox's generation and activation attempt. */
  generation: number;
  attempt: number;
  /** The operation (workflow id) of the sandbox's create. */
  createOperationId: string;
  /** True when the create may still be running and must be cancelled. */
  cancelCreate: boolean;
}

/** Result of the `deleteSandbox` workflow. */
export interface DeleteSandboxResult {
  sandboxId: string;
  /** Whether this delete changed the sandbox to `deleted` (false: another delete did). */
  retired: boolean;
  /** What happened to the recorded pod: `deleted`, `absent`, `replaced`, or `none` recorded. */
  pod: string;
}
