/**
 * Whether a workflow is still open, asked of the Temporal frontend directly (the worker's
 * orphan sweep uses it: src/worker/orphan-sweeper.ts).
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

/** What {@link listRunningWorkflowIds} needs: a Client's workflow list. */
export interface WorkflowListLike {
  workflow: {
    list(options: { query: string; pageSize: number }): AsyncIterable<{ workflowId: string }>;
  };
}

/** Workflows read per `ListWorkflowExecutions` page (the server's usual maximum). */
export const RUNNING_LIST_PAGE_SIZE = 1_000;

/**
 * The ids of the running workflows of `workflowType` (e.g. `createSandbox`), from one paged
 * visibility query (`ListWorkflowExecutions`, `WorkflowType = '…' AND ExecutionStatus =
 * 'Running'`): ceil(running / pageSize) requests, whatever asks about them afterwards.
 * Visibility is eventually consistent (Temporal docs, "Visibility"): a workflow started or closed
 * a moment ago may be missing from, or still in, the answer; a caller that acts on an absence
 * confirms it with {@link isWorkflowOpen}.
 * @param pageSize workflows per page (default {@link RUNNING_LIST_PAGE_SIZE})
 * @throws the client's error when Temporal does not answer a page
 */
export async function listRunningWorkflowIds(
  client: WorkflowListLike,
  workflowType: string,
  pageSize = RUNNING_LIST_PAGE_SIZE,
): Promise<Set<string>> {
  const ids = new Set<string>();
  const query = `WorkflowType = '${workflowType}' AND ExecutionStatus = 'Running'`;
  for await (const execution of client.workflow.list({ query, pageSize })) {
    ids.add(execution.workflowId);
  }
  return ids;
}
