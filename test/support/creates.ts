/**
 * Starts `createSandbox` workflows the way the API does: the sandbox row first, then the
 * workflow with the typed search attributes.
 */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { createSandbox } from '../../workflows/create-sandbox.js';
import { CreatePhaseKey, operationSearchAttributes } from '../../workflows/search-attributes.js';
import { readinessWaitActivityId, type CreateSandboxInput } from '../../contract/index.js';
import type { Store } from '../../store/index.js';
import { DEFAULT_TEMPLATES } from '../../config/index.js';
import type { TestStack } from './stack.js';
import { until } from './until.js';

/** `PendingActivityState.PENDING_ACTIVITY_STATE_STARTED` (temporal.api.enums.v1). */
const PENDING_STARTED = 2;

/** Options of {@link startCreate}. */
export interface StartCreateOptions {
  diskMib: number;
  /** Create deadline in ms (default 60000). */
  deadlineMs?: number;
  template?: string;
}

/**
 * A create workflow input with fresh ids (tenant `tenant-a`, template `base` with the default
 * catalog's image, 2048 MiB disk).
 */
export function createInput(overrides: Partial<CreateSandboxInput> = {}): CreateSandboxInput {
  const suffix = randomUUID().replace(/-/g, '').slice(0, 20);
  return {
    operationId: `op_${suffix}`,
    sandboxId: `sbx_${suffix}`,
    tenantId: 'tenant-a',
    template: 'base',
    image: (DEFAULT_TEMPLATES.base as { image: string }).image,
    resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
    generation: 1,
    attempt: 1,
    deadlineMs: 60_000,
    ...overrides,
  };
}

/**
 * Where {@link startCreate} starts a create: a store, a Temporal client and the worker's task
 * queue (a {@link TestStack} is one; scripts/measure-workflow-cache.ts builds its own).
 */
export interface CreateTarget {
  store: Pick<Store, 'createSandbox'>;
  temporal: { client: Pick<Client, 'workflow'> };
  taskQueue: string;
}

/** Stores a sandbox and starts its create workflow; returns the handle and input. */
export async function startCreate(
  stack: CreateTarget,
  options: StartCreateOptions,
): Promise<{ handle: WorkflowHandle<typeof createSandbox>; input: CreateSandboxInput }> {
  const input = createInput({
    template: options.template ?? 'base',
    resources: { cpu: 1, memoryMib: 256, diskMib: options.diskMib },
    deadlineMs: options.deadlineMs ?? 60_000,
  });
  const stored = await stack.store.createSandbox({
    id: input.sandboxId,
    tenant: input.tenantId,
    template: input.template,
    resources: input.resources,
    operationId: input.operationId,
    deadlineMs: input.deadlineMs,
  });
  if (stored.kind !== 'created') throw new Error(`sandbox not stored: ${stored.kind}`);
  const handle = await stack.temporal.client.workflow.start<typeof createSandbox>('createSandbox', {
    workflowId: input.operationId,
    taskQueue: stack.taskQueue,
    args: [input],
    typedSearchAttributes: operationSearchAttributes(input, 'create'),
  });
  return { handle, input };
}

/**
 * Stores a create left waiting for an IP (its operation in phase `waiting_for_ip`, pod
 * `sbx-gone-<n>-g1`) whose workflow was never started, as one Temporal no longer knows
 * (terminated, then past the namespace's retention): describing it answers NotFound.
 * @throws when the sandbox is not stored
 */
export async function storeGoneCreate(
  store: Pick<Store, 'createSandbox' | 'recordPod'>,
  n: number,
): Promise<CreateSandboxInput> {
  const gone = createInput();
  const stored = await store.createSandbox({
    id: gone.sandboxId,
    tenant: gone.tenantId,
    template: gone.template,
    resources: gone.resources,
    operationId: gone.operationId,
  });
  if (stored.kind !== 'created') throw new Error(`sandbox not stored: ${stored.kind}`);
  await store.recordPod({
    sandboxId: gone.sandboxId,
    generation: 1,
    attempt: 1,
    podName: `sbx-gone-${n}-g1`,
    podUid: `uid-of-a-pod-long-gone-${n}`,
    operationId: gone.operationId,
  });
  return gone;
}

/** The workflow's outcome: its result, or the error its result() rejected with. */
export async function settle<T>(promise: Promise<T>): Promise<{ value?: T; error?: unknown }> {
  try {
    return { value: await promise };
  } catch (error) {
    return { error };
  }
}

/**
 * Resolves once the create waits asynchronously: its phase is `waiting_for_ip` (search
 * attribute) and Temporal shows its readiness wait started under the activity id of its pod
 * (contract/readiness-wait.ts); returns the pod's name.
 * @throws when either does not happen within 90 s / 60 s
 */
export async function waitingAsync(
  stack: TestStack,
  handle: WorkflowHandle<typeof createSandbox>,
  sandboxId: string,
): Promise<string> {
  await until(
    async () =>
      (await handle.describe()).typedSearchAttributes.get(CreatePhaseKey) === 'waiting_for_ip',
    90_000,
  );
  const pod = (await stack.store.getSandboxById(sandboxId))?.pod;
  const activityId = readinessWaitActivityId(pod?.uid ?? '');
  await until(async () => {
    const pending = (await handle.describe()).raw.pendingActivities ?? [];
    return pending.some(
      (activity) => activity.activityId === activityId && activity.state === PENDING_STARTED,
    );
  }, 60_000);
  const podName = pod?.name ?? '';
  return podName;
}
