/**
 * Re-placement under attack (docs/architecture.md, "Re-placement"): a cancel while the second
 * placement's pod is being created, and the first pod's late changes after the create moved
 * on. Real dev server, a worker with the real activities, a simulated cluster of two nodes
 * (over HTTP), node-a scripted to refuse with ResourceExhausted.
 */
import type { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import { ReadinessDecider } from '../src/verdict/readiness-decider.js';
import { DEFAULT_TEMPLATES, type TemplateConfig } from '../src/config/index.js';
import { SandboxInformers } from '../src/kubernetes/sandbox-informers.js';
import { settle, startCreate } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

const NAMESPACE = 'sandboxes';
/** The worker's catalog: `base` with the policy the creates below run with (admission compares). */
const REPLACING_TEMPLATES: Record<string, TemplateConfig> = {
  base: { ...DEFAULT_TEMPLATES.base!, replace_on: ['ResourceExhausted'], max_placements: 3 },
};

let stack: TestStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

/** Stores a sandbox and starts its create with a re-placement policy, as the API does. */
function startReplacingCreate(current: TestStack) {
  return startCreate(current, {
    diskMib: 2048,
    deadlineMs: 300_000,
    overrides: { placement: { replaceOn: ['ResourceExhausted'], maxPlacements: 3 } },
  });
}

async function podsOf(sandboxId: string) {
  const list = await (stack as TestStack).kubernetes.core.listNamespacedPod({
    namespace: NAMESPACE,
    labelSelector: `durable-sandbox.dev/sandbox-id=${sandboxId}`,
  });
  return list.items;
}

describe('re-placement under attack', () => {
  it('a cancel while the second placement creates its pod waits for the pod, then deletes both placements by uid', async () => {
    stack = await startTestStack({
      cluster: { nodeNames: ['node-a', 'node-b'], startupDelayMs: 100 },
      templates: REPLACING_TEMPLATES,
    });
    const cluster = stack.cluster;
    cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', 'no sandbox capacity left');
    // Unavailable is not in the policy's replace_on: the second placement would wait on node-b.
    cluster.faults.refuseOnNode('node-b', 'Unavailable', 'sandbox runtime is down');
    const { handle, input } = await startReplacingCreate(stack);
    const base = `${input.sandboxId.replace(/_/g, '-')}-g1`;
    // Once the first placement's pod exists, the apiserver turns slow (4 s before each answer):
    // the second placement's POST, sent after the refusal, is in flight for 4 s.
    const podPosts = () =>
      cluster.requestsWhere({ verb: 'create', resource: 'pods', namespace: NAMESPACE });
    await waitUntil(() => (podPosts()[0]?.status ?? 0) > 0, { timeoutMs: 90_000 });
    cluster.faults.delayResponses(4_000);
    await waitUntil(() => podPosts().length === 2, { timeoutMs: 90_000 });
    expect(podPosts()[1]?.status).toBe(0);
    // The second placement's POST is in flight: cancel now.
    await handle.cancel();
    await waitUntil(() => (podPosts()[1]?.status ?? 0) > 0, { timeoutMs: 60_000 });
    cluster.faults.delayResponses(0);

    const { error } = await settle(handle.result());
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(await podsOf(input.sandboxId)).toEqual([]);
    const second = (await stack.store.getSandboxById(input.sandboxId))?.pod;
    expect(second?.name).toBe(`${base}-p2`);
    const deletesOf = (name: string) =>
      cluster.requestsWhere({ verb: 'delete', resource: 'pods', namespace: NAMESPACE, name });
    expect(deletesOf(`${base}-p2`).map((r) => r.deleteOptions)).toContainEqual(
      expect.objectContaining({ preconditions: { uid: second?.uid } }),
    );
    // No third placement was tried.
    expect(podPosts()).toHaveLength(2);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'cancelled' },
    });
    expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);
  }, 240_000);

  it('a second decider still holding the first pod deciding it late changes nothing: the create runs on node-b', async () => {
    stack = await startTestStack({
      cluster: { nodeNames: ['node-a', 'node-b'], startupDelayMs: 100 },
      templates: REPLACING_TEMPLATES,
    });
    // Another worker's decider: it sees node-a's refusal of the first pod and its deletion too.
    const informers = new SandboxInformers({
      client: stack.kubernetes,
      retryDelayMs: 100,
      watchTimeoutSeconds: 25,
    });
    const warnings: string[] = [];
    const other = new ReadinessDecider({
      informers,
      store: stack.store,
      client: stack.temporal.client,
      logger: { warn: (_fields, message) => warnings.push(message) },
    });
    other.start();
    informers.start();
    try {
      await waitUntil(() => informers.synced, { timeoutMs: 60_000 });
      stack.cluster.faults.refuseOnNode('node-a', 'ResourceExhausted', 'no sandbox capacity left');
      const { handle, input } = await startReplacingCreate(stack);
      const result = await handle.result();
      const base = `${input.sandboxId.replace(/_/g, '-')}-g1`;
      expect(result.pod.name).toBe(`${base}-p2`);
      // Each placement's wait closed once: the first failed (NodeRefused), the second completed.
      const events = (await handle.fetchHistory()).events ?? [];
      const closes = events
        .filter(
          (e) => e.activityTaskFailedEventAttributes ?? e.activityTaskCompletedEventAttributes,
        )
        .map((e) => e.activityTaskFailedEventAttributes?.failure?.applicationFailureInfo?.type);
      expect(closes.filter((type) => type === 'NodeRefused')).toHaveLength(1);
      expect((await podsOf(input.sandboxId)).map((pod) => pod.spec?.nodeName)).toEqual(['node-b']);
      await other.stop();
      // The other decider may win the race to fail the first placement's wait (any worker's
      // informers may decide it): that decision's own line is all it may log, at most once.
      expect(warnings.length).toBeLessThanOrEqual(1);
      expect(
        warnings.filter(
          (w) => w !== 'the node cannot run the pod; the create moves to another node; wait failed',
        ),
      ).toEqual([]);
      expect(await stack.store.listWaitingPods({ limit: 10 })).toEqual([]);
    } finally {
      await other.stop();
      await informers.stop();
    }
  }, 240_000);
});
