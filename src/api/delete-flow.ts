/**
 * Accepting a delete (`DELETE /v1/sandboxes/{id}`): start the `deleteSandbox` workflow
 * (src/workflows/delete-sandbox.ts) under a fresh operation id.
 */
import type { WorkflowStartOptions } from '@temporalio/client';
import { newOperationId } from '../../contract/index.js';
import type { SandboxRecord } from '../store/index.js';
import { deleteOperationOf, deleteWorkflowOptions } from '../temporal/delete-workflow.js';
import { tenantPriority } from '../temporal/priority.js';
import type { deleteSandbox } from '../workflows/delete-sandbox.js';
import type { AppDeps } from './deps.js';
import { ApiError } from './errors.js';

/**
 * Starts the `deleteSandbox` workflow with the options the delete flow built (default:
 * `deps.temporal.workflow.start`; a Nexus operation's start attaches its callback,
 * src/nexus/sandbox-handler.ts).
 * @returns the first run id of the started workflow
 */
export type DeleteWorkflowStarter = (
  options: WorkflowStartOptions<typeof deleteSandbox>,
) => Promise<{ firstExecutionRunId: string }>;

/**
 * Starts the delete of a sandbox the tenant owns, or, while its delete runs (a DELETE sent twice,
 * on any replica, or an expiry under way), answers that delete instead of starting another.
 * @returns the delete's operation id
 * @throws ApiError `already_done` (409) when the sandbox is already `deleted` (a `failed` one can
 *   be deleted: its pod is already gone, and it ends `deleted`, out of `?state=failed` lists)
 * @throws ApiError `unavailable` (503) when Temporal refuses the start
 */
export async function acceptDelete(
  deps: AppDeps,
  sandbox: SandboxRecord,
  startWorkflow: DeleteWorkflowStarter = (options) =>
    deps.temporal.workflow.start<typeof deleteSandbox>('deleteSandbox', options),
): Promise<string> {
  if (sandbox.state === 'deleted') {
    throw new ApiError('already_done', `sandbox ${sandbox.id} is already deleted`, {
      sandbox_id: sandbox.id,
      state: sandbox.state,
    });
  }
  // One delete at a time: a DELETE while the sandbox's delete runs answers that operation.
  const begun = await deps.store.beginDelete(
    deleteOperationOf(sandbox, newOperationId(), 'requested'),
  );
  const operationId = begun.operationId;
  // A DELETE of a sandbox still creating cancels its create (AIP-151 `requested_cancellation`).
  if (begun.inserted && sandbox.state === 'creating') {
    await deps.store.markCancellationRequested(sandbox.operationId);
  }
  if (!begun.inserted) {
    deps.logger.info(
      { operation_id: operationId, sandbox_id: sandbox.id, tenant: sandbox.tenant },
      'delete already running; answering its operation',
    );
    return operationId;
  }
  try {
    const handle = await startWorkflow(
      deleteWorkflowOptions(
        sandbox,
        operationId,
        deps.config.taskQueue,
        'requested',
        tenantPriority(deps.config.tenantLimits, sandbox.tenant),
      ),
    );
    await deps.store.recordOperationRunId(operationId, handle.firstExecutionRunId);
  } catch (err) {
    deps.logger.error(
      { err, operation_id: operationId, sandbox_id: sandbox.id },
      'could not start the delete workflow',
    );
    await deps.store.advanceOperation(operationId, {
      phase: 'finished',
      status: 'failed',
      error: {
        code: 'unavailable',
        message: 'the delete workflow could not be started',
        details: {},
      },
    });
    throw new ApiError('unavailable', 'the workflow service is unavailable; try again', {
      sandbox_id: sandbox.id,
    });
  }
  deps.logger.info(
    { operation_id: operationId, sandbox_id: sandbox.id, tenant: sandbox.tenant },
    'delete accepted',
  );
  return operationId;
}
