/**
 * Creates as the suites need them: started the way the API does (tools/start-create.ts),
 * stored as ones Temporal no longer knows, settled, or followed until they wait asynchronously.
 */
import { randomUUID } from 'node:crypto';
import type { WorkflowHandle } from '@temporalio/client';
import { DEFAULT_TEMPLATES } from '../../src/config/index.js';
import { createPod } from '../../src/kubernetes/pods.js';
import { harnessUnstartedWait } from './harness-workflows.js';
import type { createSandbox } from '../../src/workflows/create-sandbox.js';
import { CreatePhaseKey } from '../../src/temporal/search-attribute-keys.js';
import { readinessWaitActivityId, type CreateSandboxInput } from '../../contract/index.js';
import type { Store } from '../../src/store/index.js';
import type { TestStack } from './stack.js';
import { createInput } from '../../tools/start-create.js';
import { waitUntil } from '../../tools/wait-until.js';

/** `PendingActivityState.PENDING_ACTIVITY_STATE_STARTED` (temporal.api.enums.v1). */
const PENDING_STARTED = 2;

export {
  createInput,
  startCreate,
  storeSandbox,
  type CreateTarget,
  type StartCreateOptions,
} from '../../tools/start-create.js';

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
  await waitUntil(
    async () =>
      (await handle.describe()).typedSearchAttributes.get(CreatePhaseKey) === 'waiting_for_ip',
    { timeoutMs: 90_000 },
  );
  const pod = (await stack.store.getSandboxById(sandboxId))?.pod;
  const activityId = readinessWaitActivityId(pod?.uid ?? '');
  await waitUntil(
    async () => {
      const pending = (await handle.describe()).raw.pendingActivities ?? [];
      return pending.some(
        (activity) => activity.activityId === activityId && activity.state === PENDING_STARTED,
      );
    },
    { timeoutMs: 60_000 },
  );
  const podName = pod?.name ?? '';
  return podName;
}

/**
 * A sandbox pod naming `workflowId` (annotation `durable-sandbox.dev/operation-id`), and that
 * workflow started as the harness's readiness wait of the pod (test/support/harness-workflows.ts),
 * scheduled on a queue no worker polls: the attempt stays scheduled and never starts, so only a
 * completion by id decides it. Resolves once Temporal shows the wait pending.
 */
export async function podWithUnstartedWait(stack: TestStack, workflowId: string) {
  const pod = await createPod(stack.kubernetes, {
    operationId: workflowId,
    sandboxId: `sbx_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
    generation: 1,
    template: 'base',
    image: DEFAULT_TEMPLATES.base?.image ?? '',
    resources: { cpu: 1, memoryMib: 512, diskMib: 2048 },
  });
  const handle = await stack.temporal.client.workflow.start(harnessUnstartedWait, {
    taskQueue: stack.taskQueue,
    workflowId,
    args: [{ podUid: pod.uid, taskQueue: `${stack.taskQueue}-nobody` }],
  });
  await waitUntil(async () => ((await handle.describe()).raw.pendingActivities ?? []).length > 0);
  return { pod, handle };
}
