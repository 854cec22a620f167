/**
 * Starting or waking a sandbox's `sandboxLifetime` workflow (docs/api.md, "Lifetimes";
 * docs/architecture.md, "Lifetimes") from a Temporal client: when the sandbox runs
 * (src/activities/store.ts) and when its `expire_time` is extended (src/api/extend-flow.ts). The
 * workflow deletes the sandbox when its timer fires (src/activities/lifetime.ts).
 */
import type { Client } from '@temporalio/client';
import type { Priority } from '@temporalio/common';
import {
  EXPIRE_TIME_SIGNAL,
  LIFETIME_WORKFLOW,
  lifetimeWorkflowId,
  type SandboxLifetimeInput,
} from '../../contract/index.js';
import type { SandboxRecord } from '../store/index.js';

/**
 * Starts the sandbox's lifetime workflow, or tells the running one its `expire_time` (signal
 * {@link EXPIRE_TIME_SIGNAL}), when the sandbox runs with an expiry. Called after each store
 * transition to `running` and after an extend; a repeat only signals again.
 * @param priority the tenant's fairness key and weight (src/temporal/priority.ts)
 * @returns whether a lifetime was started or signalled (false: not running, or no expiry)
 * @throws Temporal's error (the calling step is retried)
 */
export async function startLifetime(
  client: Client,
  taskQueue: string,
  sandbox: SandboxRecord | undefined,
  priority: Priority,
): Promise<boolean> {
  if (!sandbox || sandbox.state !== 'running' || !sandbox.expireTime) return false;
  const input: SandboxLifetimeInput = {
    sandboxId: sandbox.id,
    tenantId: sandbox.tenant,
    expireTime: sandbox.expireTime,
  };
  await client.workflow.signalWithStart(LIFETIME_WORKFLOW, {
    workflowId: lifetimeWorkflowId(sandbox.id),
    taskQueue,
    args: [input],
    signal: EXPIRE_TIME_SIGNAL,
    signalArgs: [sandbox.expireTime],
    staticSummary: `lifetime of ${sandbox.id} (template ${sandbox.template})`,
    staticDetails:
      `**Sandbox** ${sandbox.id} (tenant ${sandbox.tenant}), expiring at ${sandbox.expireTime} ` +
      'when it started; a timer until its expire_time, then the delete (cause expired)',
    // The tenant's fairness key and weight (src/temporal/priority.ts).
    priority,
  });
  return true;
}
