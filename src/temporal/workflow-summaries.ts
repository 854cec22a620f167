/**
 * What the Temporal UI shows for an operation's workflow before it has run a step: a one-line
 * static summary (the workflow list's "Summary" column) and static details (the workflow page),
 * set when the API (or, for a delete, a sandbox's lifetime) starts the workflow. Temporal renders
 * both as its markdown subset.
 */
import type { DeleteCause } from '../../contract/index.js';
import type { SandboxRecord } from '../store/index.js';

type SandboxFields = Pick<SandboxRecord, 'id' | 'tenant' | 'template' | 'resources' | 'generation'>;

/** Summary and details of a workflow start. */
export interface WorkflowSummary {
  staticSummary: string;
  staticDetails: string;
}

function resources(sandbox: SandboxFields): string {
  const { cpu, memoryMib: memory, diskMib: disk } = sandbox.resources;
  return `disk ${disk} MiB, cpu ${cpu}, memory ${memory} MiB`;
}

/**
 * The `createSandbox` workflow's summary, e.g.
 * `create sbx_… (template base, disk 300 MiB, cpu 1, memory 1024 MiB)`.
 * @param deadlineMs the create's deadline from the workflow's start
 */
export function createSummary(
  sandbox: SandboxFields,
  image: string,
  deadlineMs: number,
): WorkflowSummary {
  return {
    staticSummary: `create ${sandbox.id} (template ${sandbox.template}, ${resources(sandbox)})`,
    staticDetails: [
      `**Sandbox** ${sandbox.id} (tenant ${sandbox.tenant}, generation ${sandbox.generation})`,
      `**Template** ${sandbox.template}, image \`${image}\``,
      `**Resources** ${resources(sandbox)}`,
      `**Deadline** ${Math.round(deadlineMs / 1000)} s after the start (a timer: compensation runs after it)`,
      '**Steps** createPod, awaitPodReady (pod IP or the node refusing it), markSandboxRunning; ' +
        'on failure deletePod and retireExecution',
    ].join('\n\n'),
  };
}

/** The `deleteSandbox` workflow's summary, e.g. `delete sbx_… (template base, …)`. */
export function deleteSummary(
  sandbox: SandboxFields & { state: string; expireTime?: string | null },
  cause: DeleteCause = 'requested',
): WorkflowSummary {
  const why = cause === 'expired' ? ' (expired)' : '';
  return {
    staticSummary: `delete ${sandbox.id}${why} (template ${sandbox.template}, ${resources(sandbox)})`,
    staticDetails: [
      `**Sandbox** ${sandbox.id} (tenant ${sandbox.tenant}, state ${sandbox.state} when the delete was accepted)`,
      cause === 'expired'
        ? `**Cause** expired: its expire_time ${sandbox.expireTime ?? ''} passed (its lifetime workflow started this delete)`
        : '**Cause** requested by a caller',
      '**Steps** cancel the create if it still runs and wait for it to close, delete the pod, ' +
        'mark the sandbox deleted',
    ].join('\n\n'),
  };
}
