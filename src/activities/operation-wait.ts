/**
 * Steps that look at other operations (workflows) through the worker's own Temporal client.
 */
import { Context } from '@temporalio/activity';
import { WorkflowFailedError } from '@temporalio/client';
import { whileHeartbeating } from '../temporal/heartbeat.js';

/** Builds the operation activities (no dependencies: the client comes from the activity context). */
export function operationActivities() {
  return {
    /**
     * Waits until the workflow `operationId` has closed, however it ended (heartbeating meanwhile,
     * so a dead worker's wait moves on).
     * @returns how it closed, e.g. `COMPLETED`, `FAILED`, `CANCELLED`, or `NOT_FOUND`
     */
    async awaitOperationClosed(input: { operationId: string }): Promise<string> {
      const context = Context.current();
      const handle = context.client.workflow.getHandle(input.operationId);
      const closed = handle.result().catch((err: unknown) => {
        // Failed, cancelled, terminated or timed out: closed all the same. Anything else
        // (the service unreachable) fails this attempt and Temporal retries it.
        if (!(err instanceof WorkflowFailedError)) throw err;
      });
      // When cancellation wins the race, a later rejection of `closed` is nobody's to handle.
      closed.catch(() => undefined);
      try {
        // Cancellation (e.g. the worker shutting down) rejects `cancelled` with the SDK's
        // CancelledFailure and stops the wait; another attempt resumes it.
        await whileHeartbeating(Promise.race([closed, context.cancelled]));
        return (await handle.describe()).status.name;
      } catch (err) {
        if ((err as Error).name === 'WorkflowNotFoundError') return 'NOT_FOUND';
        throw err;
      }
    },
  };
}
