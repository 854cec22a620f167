/**
 * A caller's workflow, in its own namespace, that creates a sandbox through the `sandbox` Nexus
 * service (docs/nexus.md). Its worker bundles this file; `endpoint` is the Nexus endpoint the
 * operator created for the service (`temporal operator nexus endpoint create`).
 */
import * as workflow from '@temporalio/workflow';
import type { CreateSandboxResult } from '../../../contract/index.js';
import type { DeleteSandboxResult } from '../../../contract/index.js';
import {
  nexusFailureCode,
  sandboxFailureOf,
  sandboxService,
  type NexusCreateInput,
} from '../../../src/nexus/service.js';

/** What {@link createSandboxThroughNexus} ends with. */
export type NexusCallerOutcome =
  | { status: 'running'; sandbox: CreateSandboxResult }
  | { status: 'failed'; code: string; message: string; details?: unknown };

/**
 * Creates a sandbox and waits for it to run (up to `timeout`, default 10 minutes). A create that
 * fails ends `failed` with the create's code (`invalid_request`, `no_node_available`, …) and
 * message; cancelling this workflow cancels the create, whose compensation deletes its pod.
 */
export async function createSandboxThroughNexus(
  endpoint: string,
  input: NexusCreateInput,
  timeout = '10 minutes',
): Promise<NexusCallerOutcome> {
  const sandboxes = workflow.createNexusServiceClient({ endpoint, service: sandboxService });
  try {
    const sandbox = await sandboxes.executeOperation('create', input, {
      scheduleToCloseTimeout: timeout,
    });
    return { status: 'running', sandbox };
  } catch (err) {
    const cause = sandboxFailureOf(err);
    if (cause && !workflow.isCancellation(err)) {
      return {
        status: 'failed',
        code: nexusFailureCode(cause.type),
        message: cause.message,
        details: cause.details?.[0],
      };
    }
    throw err;
  }
}

/**
 * Deletes a sandbox of the caller's tenant through the `sandbox` Nexus service and waits until
 * it is deleted (its pod gone).
 */
export async function deleteSandboxThroughNexus(
  endpoint: string,
  sandboxId: string,
  timeout = '10 minutes',
): Promise<DeleteSandboxResult> {
  const sandboxes = workflow.createNexusServiceClient({ endpoint, service: sandboxService });
  return sandboxes.executeOperation(
    'delete',
    { sandbox_id: sandboxId },
    { scheduleToCloseTimeout: timeout },
  );
}
