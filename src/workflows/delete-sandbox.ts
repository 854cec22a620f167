/**
 * The `deleteSandbox` workflow (docs/api.md, `DELETE /v1/sandboxes/{id}`): cancel the
 * sandbox's create if it is still running and wait for it to close (its compensation deletes its
 * pod and retires its execution, so it ends `cancelled`, or with the outcome recorded before the
 * cancel took effect, never racing this delete), then delete
 * the pod the store recorded (uid precondition), then mark the sandbox `deleted`, retiring any
 * execution still active. Runs entirely non-cancellable: a delete, once accepted, finishes.
 *
 * Deterministic: no I/O, time only from the workflow API.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
} from '@temporalio/workflow';
import type { CreateActivities } from '../activities/index.js';
import {
  NOT_ADMITTED_FAILURE_TYPE,
  type DeleteSandboxInput,
  type DeleteSandboxResult,
} from '../../contract/index.js';

/**
 * Waiting for a cancelled create to close: its compensation is retried until it succeeds, so
 * this waits as long as it takes, heartbeating.
 */
const createClosedWait = proxyActivities<CreateActivities>({
  startToCloseTimeout: '1 hour',
  heartbeatTimeout: '20 seconds',
});

/** Store and Kubernetes steps: idempotent, retried by Temporal until they succeed. */
const deletionStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/**
 * Admits the delete ("What the worker trusts", docs/security.md): checks its input against the
 * store (src/activities/admission.ts), so a delete started by anyone but the API cancels nothing,
 * deletes no pod and writes nothing. Retried on the store's errors like every step of the delete.
 * @throws ApplicationFailure `NotAdmitted` (non-retryable), with the admission's message
 */
async function admit(input: DeleteSandboxInput): Promise<void> {
  try {
    await deletionStep.admitDelete({
      operationId: input.operationId,
      sandboxId: input.sandboxId,
      tenantId: input.tenantId,
      generation: input.generation,
      createOperationId: input.createOperationId,
    });
  } catch (err) {
    const failure = err instanceof ActivityFailure ? err.cause : err;
    if (!(failure instanceof ApplicationFailure)) throw err;
    throw ApplicationFailure.create({
      type: NOT_ADMITTED_FAILURE_TYPE,
      nonRetryable: true,
      message: failure.message,
    });
  }
}

/**
 * Deletes one sandbox.
 * @returns whether this delete retired the execution and what happened to the pod
 * Never fails for a create that already ended or a pod already gone.
 * @throws ApplicationFailure `NotAdmitted` (non-retryable) when the store does not hold the
 *   delete as its input describes it; nothing was done
 */
export async function deleteSandbox(input: DeleteSandboxInput): Promise<DeleteSandboxResult> {
  return CancellationScope.nonCancellable(async () => {
    await admit(input);
    if (input.cancelCreate) {
      try {
        await getExternalWorkflowHandle(input.createOperationId).cancel();
        log.info('create cancelled', { createOperationId: input.createOperationId });
      } catch (err) {
        // The create already ended: nothing to cancel.
        log.info('create not cancelled', {
          createOperationId: input.createOperationId,
          error: (err as Error).message,
        });
      }
      // Its compensation deletes its pod and retires its execution; wait until it is done, so
      // nothing of the create runs after the sandbox is deleted.
      const closed = await createClosedWait.awaitOperationClosed({
        operationId: input.createOperationId,
      });
      log.info('create closed', { createOperationId: input.createOperationId, closed });
    }
    const pod = await deletionStep.readSandboxPod({ sandboxId: input.sandboxId });
    const outcome = pod
      ? await deletionStep.deletePod({
          operationId: input.operationId,
          sandboxId: input.sandboxId,
          pod,
        })
      : 'none';
    const retired = await deletionStep.markSandboxDeleted({
      operationId: input.operationId,
      sandboxId: input.sandboxId,
    });
    return { sandboxId: input.sandboxId, retired, pod: outcome };
  });
}
