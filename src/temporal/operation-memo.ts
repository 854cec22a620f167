/**
 * The memo of an operation's workflow: written when the workflow is started (src/api/create-flow.ts,
 * src/temporal/delete-workflow.ts), read back with the workflow's description (src/api/operation-read.ts,
 * src/nexus/sandbox-handler.ts).
 */
import type { DeleteCause, OperationType } from '../../contract/index.js';

/** What the API writes into a workflow's memo when it starts it. */
export interface OperationMemo {
  type: OperationType;
  sandboxId: string;
  tenantId: string;
  /** The create's deadline in ms from the start; absent for deletes. */
  deadlineMs?: number;
  /** A delete's cause; absent for a create, and for deletes started before causes existed. */
  cause?: DeleteCause;
}
