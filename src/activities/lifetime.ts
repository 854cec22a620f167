/**
 * A sandbox's lifetime (docs/api.md, "Lifetimes"; docs/architecture.md, "Lifetimes"): end its
 * `sandboxLifetime` workflow when the sandbox is deleted, and, when its timer fires, delete the
 * sandbox through the same `deleteSandbox` workflow as `DELETE`. Starting or waking it is
 * src/temporal/lifetime-workflow.ts (the API's extend starts it too).
 * The store's `expire_time` is the truth: the workflow's timer and signals only say when to look,
 * so a lifetime started by anyone but this service deletes nothing early.
 */
import { createHash } from 'node:crypto';
import { Context, log } from '@temporalio/activity';
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { lifetimeWorkflowId, operationIdOf, type ExpiryOutcome } from '../../contract/index.js';
import type { TenantLimitsConfig } from '../config/index.js';
import type { SandboxRecord, Store } from '../store/index.js';
import { deleteOperationOf, deleteWorkflowOptions } from '../temporal/delete-workflow.js';
import { tenantPriority } from '../temporal/priority.js';
import type { CreateMetrics } from './metrics.js';

/**
 * The delete operation of a sandbox generation's expiry: `op_` and 26 base32 characters of a
 * SHA-256 of the sandbox and generation, so every attempt (and every lifetime run) names the
 * same operation and starts its workflow once.
 */
export function expiryOperationId(sandbox: Pick<SandboxRecord, 'id' | 'generation'>): string {
  return operationIdOf(
    createHash('sha256').update(`expire/${sandbox.id}/${sandbox.generation}`).digest(),
  );
}

/**
 * Ends the sandbox's lifetime workflow (a cancel) once the sandbox is deleted, so no timer fires
 * on nothing. A lifetime already closed, or never started, is fine.
 * @throws Temporal's error other than "not found" (the calling step is retried)
 */
export async function endLifetime(client: Context['client'], sandboxId: string): Promise<void> {
  try {
    await client.workflow.getHandle(lifetimeWorkflowId(sandboxId)).cancel();
    log.info('lifetime ended', { sandbox_id: sandboxId });
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}

/** Dependencies of the lifetime activities. */
export interface LifetimeActivityDeps {
  store: Store;
  metrics?: CreateMetrics;
  /** TENANT_LIMITS: the fairness weight of the deletes it starts (src/temporal/priority.ts). */
  tenantLimits?: TenantLimitsConfig;
}

/** Builds the lifetime activities over their dependencies. */
export function lifetimeActivities(deps: LifetimeActivityDeps) {
  return {
    /**
     * What a lifetime does when its timer fires: reads the sandbox; when it still runs and its
     * `expire_time` has passed, stores a `sandbox.delete` operation with cause `expired` (once:
     * its id is {@link expiryOperationId}) and starts its `deleteSandbox` workflow, as `DELETE`
     * does (src/temporal/delete-workflow.ts), counting `durable_sandbox_sandboxes_expired_total`.
     * @returns `deleting` with the operation, `extended` with the later time the store holds,
     *   or `ended` when the sandbox no longer runs
     * @throws the store's or Temporal's error (retried)
     */
    async expireSandbox(input: { sandboxId: string }): Promise<ExpiryOutcome> {
      const sandbox = await deps.store.getSandboxById(input.sandboxId);
      if (!sandbox || sandbox.state !== 'running' || !sandbox.expireTime) {
        return { kind: 'ended', state: sandbox?.state ?? 'missing' };
      }
      if (Date.parse(sandbox.expireTime) > Date.now()) {
        return { kind: 'extended', expireTime: sandbox.expireTime };
      }
      const operationId = expiryOperationId(sandbox);
      if (!(await deps.store.getOperation(sandbox.tenant, operationId))) {
        const begun = await deps.store.beginDelete(
          deleteOperationOf(sandbox, operationId, 'expired'),
        );
        // A caller's DELETE is already under way: the sandbox goes with it (one delete at a time).
        if (!begun.inserted) return { kind: 'deleting', operationId: begun.operationId };
      }
      const context = Context.current();
      try {
        const handle = await context.client.workflow.start(
          'deleteSandbox',
          deleteWorkflowOptions(
            sandbox,
            operationId,
            context.info.taskQueue,
            'expired',
            tenantPriority(deps.tenantLimits, sandbox.tenant),
          ),
        );
        await deps.store.recordOperationRunId(operationId, handle.firstExecutionRunId);
        deps.metrics?.sandboxesExpired.inc({ template: sandbox.template });
      } catch (err) {
        // An earlier attempt started it.
        if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      }
      log.info('sandbox expired', {
        sandbox_id: sandbox.id,
        operation_id: operationId,
        expire_time: sandbox.expireTime,
      });
      return { kind: 'deleting', operationId };
    },
  };
}
