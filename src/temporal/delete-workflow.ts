/**
 * The start of a `deleteSandbox` workflow (src/workflows/delete-sandbox.ts) from a Temporal client:
 * its operation row and its start options, the one shape of a delete whether a caller asked for
 * it (`DELETE /v1/sandboxes/{id}`, src/api/delete-flow.ts) or the sandbox's lifetime ended
 * (src/activities/lifetime.ts).
 */
import type { WorkflowStartOptions } from '@temporalio/client';
import type { Priority } from '@temporalio/common';
import type { DeleteCause, DeleteSandboxInput, DeleteSandboxResult } from '../../contract/index.js';
import type { SandboxRecord } from '../store/index.js';
import type { OperationMemo } from './operation-memo.js';
import { operationSearchAttributes } from './search-attribute-keys.js';
import { deleteSummary } from './workflow-summaries.js';

/** A delete's execution timeout: a backstop for a step retried forever (1 h). */
export const DELETE_EXECUTION_TIMEOUT_MS = 3_600_000;

/**
 * The `deleteSandbox` workflow's signature (src/workflows/delete-sandbox.ts), for typed start options
 * without importing the workflow (src/api/delete-flow.ts checks the two agree when it starts it).
 */
type DeleteSandboxWorkflow = (input: DeleteSandboxInput) => Promise<DeleteSandboxResult>;

/** The operation row of a delete of `sandbox` (phase `deleting`), as either cause stores it. */
export function deleteOperationOf(sandbox: SandboxRecord, operationId: string, cause: DeleteCause) {
  return {
    id: operationId,
    type: 'sandbox.delete' as const,
    tenant: sandbox.tenant,
    sandboxId: sandbox.id,
    phase: 'deleting' as const,
    cause,
  };
}

/**
 * The start options of the `deleteSandbox` workflow of `sandbox` under `operationId` (its
 * workflow id): the one shape of a delete, whether a caller asked for it (`requested`) or the
 * sandbox's lifetime ended (`expired`, src/activities/lifetime.ts).
 * @param priority the tenant's fairness key and weight (src/temporal/priority.ts)
 */
export function deleteWorkflowOptions(
  sandbox: SandboxRecord,
  operationId: string,
  taskQueue: string,
  cause: DeleteCause,
  priority: Priority,
): WorkflowStartOptions<DeleteSandboxWorkflow> {
  const input: DeleteSandboxInput = {
    operationId,
    sandboxId: sandbox.id,
    tenantId: sandbox.tenant,
    generation: sandbox.generation,
    attempt: 1,
    createOperationId: sandbox.operationId,
    cancelCreate: sandbox.state === 'creating',
  };
  const memo: OperationMemo = {
    type: 'sandbox.delete',
    sandboxId: sandbox.id,
    tenantId: sandbox.tenant,
    cause,
  };
  return {
    workflowId: operationId,
    taskQueue,
    args: [input],
    typedSearchAttributes: operationSearchAttributes(
      { sandboxId: sandbox.id, tenantId: sandbox.tenant, template: sandbox.template },
      'delete',
    ),
    memo: { ...memo },
    ...deleteSummary(sandbox, cause),
    workflowExecutionTimeout: DELETE_EXECUTION_TIMEOUT_MS,
    // The tenant's fairness key and weight (src/temporal/priority.ts).
    priority,
  };
}
