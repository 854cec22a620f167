/**
 * Whether a workflow is still open, asked of the Temporal frontend directly (the worker's
 * orphan sweep uses it: worker/orphan-sweeper.ts).
 */

/** `temporal.api.enums.v1.WorkflowExecutionStatus.WORKFLOW_EXECUTION_STATUS_RUNNING`. */
const WORKFLOW_EXECUTION_STATUS_RUNNING = 1;
/** gRPC status NOT_FOUND. */
const GRPC_NOT_FOUND = 5;

/** What the check needs: the workflow service of a Client's or a Worker's connection. */
export interface WorkflowServiceLike {
  workflowService: {
    describeWorkflowExecution(request: {
      namespace: string;
      execution: { workflowId: string };
    }): Promise<{ workflowExecutionInfo?: { status?: number | null } | null }>;
  };
}

/**
 * @returns true while the latest run of `workflowId` is running; false when it is closed or
 *   Temporal no longer knows it (closed and past its retention)
 * @throws the client's error when Temporal does not answer
 */
export async function isWorkflowOpen(
  connection: WorkflowServiceLike,
  namespace: string,
  workflowId: string,
): Promise<boolean> {
  try {
    const { workflowExecutionInfo } = await connection.workflowService.describeWorkflowExecution({
      namespace,
      execution: { workflowId },
    });
    return workflowExecutionInfo?.status === WORKFLOW_EXECUTION_STATUS_RUNNING;
  } catch (err) {
    if ((err as { code?: unknown } | null)?.code === GRPC_NOT_FOUND) return false;
    throw err;
  }
}
