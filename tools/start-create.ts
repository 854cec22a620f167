/**
 * Starts `createSandbox` workflows the way the API does: the sandbox row first, then the
 * workflow with the typed search attributes. For tooling that drives the worker without the API
 * (tools/measure-workflow-cache.ts) and for the test suites (test/support/creates.ts).
 */
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandle } from '@temporalio/client';
import type { createSandbox } from '../src/workflows/create-sandbox.js';
import { operationSearchAttributes } from '../src/temporal/search-attribute-keys.js';
import type { CreateSandboxInput } from '../contract/index.js';
import type { Store } from '../src/store/index.js';
import { DEFAULT_TEMPLATES } from '../src/config/index.js';

/** Options of {@link startCreate}. */
export interface StartCreateOptions {
  diskMib: number;
  /** Create deadline in ms (default 60000). */
  deadlineMs?: number;
  template?: string;
  /**
   * More fields of the workflow input, applied last (e.g. `placement` for a re-placing create,
   * `searchAttributes` for a namespace missing some).
   */
  overrides?: Partial<CreateSandboxInput>;
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
 * queue (a test stack is one; tools/measure-workflow-cache.ts builds its own).
 */
export interface CreateTarget {
  store: Pick<Store, 'createSandbox'>;
  temporal: { client: Pick<Client, 'workflow'> };
  taskQueue: string;
}

/**
 * Stores a sandbox and starts its create workflow (`createSandbox`, workflow id the operation
 * id, on `stack.taskQueue`, with the operation's search attributes); returns the handle and input.
 * @throws when the store does not store the sandbox ({@link storeSandbox}), or Temporal refuses
 *   the start (e.g. WorkflowExecutionAlreadyStartedError)
 */
export async function startCreate(
  stack: CreateTarget,
  options: StartCreateOptions,
): Promise<{ handle: WorkflowHandle<typeof createSandbox>; input: CreateSandboxInput }> {
  const input = createInput({
    template: options.template ?? 'base',
    resources: { cpu: 1, memoryMib: 256, diskMib: options.diskMib },
    deadlineMs: options.deadlineMs ?? 60_000,
    ...options.overrides,
  });
  await storeSandbox(stack.store, input);
  const handle = await stack.temporal.client.workflow.start<typeof createSandbox>('createSandbox', {
    workflowId: input.operationId,
    taskQueue: stack.taskQueue,
    args: [input],
    typedSearchAttributes: operationSearchAttributes(input, 'create'),
  });
  return { handle, input };
}

/**
 * Stores the sandbox row of a create as the API does before it starts the workflow: its id,
 * tenant, template, resources, operation and deadline (ms) from `input`.
 * @throws Error `sandbox not stored: <kind>` when the store answers anything but `created`
 */
export async function storeSandbox(
  store: Pick<Store, 'createSandbox'>,
  input: CreateSandboxInput,
): Promise<void> {
  const stored = await store.createSandbox({
    id: input.sandboxId,
    tenant: input.tenantId,
    template: input.template,
    resources: input.resources,
    operationId: input.operationId,
    deadlineMs: input.deadlineMs,
  });
  if (stored.kind !== 'created') throw new Error(`sandbox not stored: ${stored.kind}`);
}
