/**
 * The readiness wait over one informer pair (docs/architecture.md, "The readiness watch"),
 * decided by the rules the worker runs (src/verdict/readiness-watch.ts: the wait activity's
 * cache read, the decider's decision of each change and its read by name), against the
 * simulated cluster over HTTP. What the apiserver saw (its request log) proves
 * that the waits open no watch of their own and that nothing polls: pods are listed once
 * and watched by the label selector, events listed once and watched by the refusal selector.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createKubernetesClient, type KubernetesClient } from '../src/kubernetes/client.js';
import { createPod, type PodRef } from '../src/kubernetes/pods.js';
import {
  cachedOutcome,
  eventChangeOutcome,
  podChangeOutcome,
  podOutcome,
  readOutcome,
  type ReadinessOutcome,
} from '../src/verdict/readiness-watch.js';
import {
  SandboxInformers,
  type SandboxInformersOptions,
} from '../src/kubernetes/sandbox-informers.js';
import {
  SimulatedCluster,
  type RequestVerb,
  type SimulatedClusterOptions,
} from '../environments/simulated-cluster/index.js';
import { waitUntil } from '../tools/wait-until.js';

const NAMESPACE = 'sandboxes';
const INVALID_ARGUMENT_MESSAGE =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] ' +
  'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';
const EVENTS_SELECTOR = 'reason=FailedCreatePodSandBox,involvedObject.kind=Pod';
/** How long the pods cache may lack a waited-for pod before it is read by name, ms (the decider's default). */
const POD_READ_DELAY_MS = 5_000;

let cluster: SimulatedCluster;
let client: KubernetesClient;
let informers: SandboxInformers | undefined;
let sequence = 0;

interface Logged {
  level: string;
  fields: Record<string, unknown>;
  message: string;
}
let logged: Logged[] = [];

async function startCluster(options: SimulatedClusterOptions = {}): Promise<void> {
  cluster = await SimulatedCluster.start({ startupDelayMs: 100, ...options });
  client = createKubernetesClient({
    kubeconfigYaml: cluster.kubeconfigYaml(),
    namespace: NAMESPACE,
  });
}

function startInformers(overrides: Partial<SandboxInformersOptions> = {}): SandboxInformers {
  logged = [];
  const log = (level: string) => (fields: Record<string, unknown>, message: string) =>
    logged.push({ level, fields, message });
  informers = new SandboxInformers({
    client,
    retryDelayMs: 50,
    watchTimeoutSeconds: 25,
    logger: { info: log('info'), warn: log('warn'), error: log('error') },
    ...overrides,
  });
  informers.start();
  return informers;
}

afterEach(async () => {
  await informers?.stop();
  informers = undefined;
  await cluster?.close();
});

async function newPod(diskMib: number): Promise<PodRef> {
  sequence += 1;
  return createPod(client, {
    // The create's workflow id the decider completes the wait under (src/verdict/pod-wait.ts).
    operationId: `op_readiness${sequence}`,
    sandboxId: `sbx_readiness${sequence}`,
    generation: 1,
    template: 'base',
    image: 'example/base:1',
    resources: { cpu: 1, memoryMib: 256, diskMib },
  });
}

/**
 * The first decisive outcome for `pod` by the rules the worker runs (src/verdict/readiness-watch.ts):
 * the caches as the wait activity reads them when it starts (`cachedOutcome`), then each change
 * the informers report as the decider decides it (`podChangeOutcome`, `eventChangeOutcome`, and
 * `cachedOutcome` again when the pods informer is refused), and a pod the pods cache still lacks
 * after POD_READ_DELAY_MS read once by name (`readOutcome`), as the decider does for a wait it
 * holds. Rejects when `signal` aborts.
 */
function wait(pod: PodRef, signal: AbortSignal = AbortSignal.timeout(60_000)) {
  // A bound keeps a broken build from hanging the suite.
  const watched = informers as SandboxInformers;
  return new Promise<ReadinessOutcome>((resolve, reject) => {
    const finish = (end: () => void) => {
      unobserve();
      clearTimeout(readTimer);
      signal.removeEventListener('abort', onAbort);
      end();
    };
    const decide = (outcome: ReadinessOutcome | undefined) => {
      if (outcome) finish(() => resolve(outcome));
    };
    const onAbort = () => finish(() => reject(signal.reason));
    signal.addEventListener('abort', onAbort, { once: true });
    const unobserve = watched.observe({
      onPod: (type, changed) => {
        if (changed.metadata?.uid === pod.uid) {
          decide(podChangeOutcome(watched, type, changed, { pod }));
        }
      },
      onEvent: (event) => {
        const change = eventChangeOutcome(watched, event);
        if (change?.wait.pod.uid === pod.uid) decide(change.outcome);
      },
      onPodsRefused: () => decide(cachedOutcome(watched, pod)),
    });
    const readTimer = setTimeout(() => {
      if (!watched.cachedPod(pod.name)) readOutcome(watched, { pod }).then(decide, () => undefined);
    }, POD_READ_DELAY_MS);
    decide(cachedOutcome(watched, pod));
  });
}

/** The reads of a whole collection in the namespace: lists and watches, or the verb given. */
function reads(resource: 'pods' | 'events', verb: RequestVerb | RequestVerb[] = ['list', 'watch']) {
  return cluster.requestsWhere({ verb, resource, namespace: NAMESPACE });
}

/**
 * Every read was the informers': events listed with the refusal selector and watched with it
 * (bookmarks, timeoutSeconds); pods listed and watched by the sandbox-id label; each resource
 * listed `lists` times. No GET of a single pod or event.
 */
function expectInformersOnly({ lists = 1 } = {}): void {
  for (const request of reads('events')) {
    expect(request.query.fieldSelector).toBe(EVENTS_SELECTOR);
    if (request.watch) expect(request.query).toMatchObject({ allowWatchBookmarks: 'true' });
  }
  for (const request of reads('pods')) {
    expect(request.query.labelSelector).toBe('durable-sandbox.dev/sandbox-id');
    if (request.watch) expect(request.query).toMatchObject({ allowWatchBookmarks: 'true' });
  }
  expect(reads('events', 'list')).toHaveLength(lists);
  expect(reads('pods', 'list')).toHaveLength(lists);
  const singleReads = cluster.requestsWhere({ verb: 'get', resource: ['pods', 'events'] });
  expect(singleReads).toHaveLength(0);
}

const synced = () =>
  waitUntil(() => cluster.openWatches('pods') === 1 && cluster.openWatches('events') === 1);

describe('readiness wait over the informers', () => {
  beforeEach(() => startCluster());

  it('ends with the node reason when the node refuses as InvalidArgument after the wait began', async () => {
    startInformers();
    await synced();
    cluster.faults.neverReady(true);
    const pod = await newPod(300);
    const outcome = wait(pod);
    await waitUntil(() => (informers as SandboxInformers).cachedPod(pod.name) !== undefined);
    cluster.node.recordSandboxFailure(NAMESPACE, pod.name, INVALID_ARGUMENT_MESSAGE);
    expect(await outcome).toMatchObject({
      outcome: 'refused',
      code: 'InvalidArgument',
      reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
    });
    expectInformersOnly();
  });

  it('finds a refusal recorded before the wait started in the cache, with no request', async () => {
    startInformers();
    await synced();
    cluster.faults.neverReady(true);
    const pod = await newPod(300);
    cluster.node.recordSandboxFailure(NAMESPACE, pod.name, INVALID_ARGUMENT_MESSAGE);
    await waitUntil(() => (informers as SandboxInformers).cachedEvents(pod.uid).length === 1);
    const mark = cluster.requestMark();
    expect(await wait(pod)).toMatchObject({
      outcome: 'refused',
      reason: expect.stringContaining('451 MiB'),
    });
    expect(cluster.requestsWhere({ after: mark })).toEqual([]);
    expectInformersOnly();
  });

  it('finds a refusal recorded before the worker started (its first list)', async () => {
    cluster.faults.neverReady(true);
    const pod = await newPod(300);
    cluster.node.recordSandboxFailure(NAMESPACE, pod.name, INVALID_ARGUMENT_MESSAGE);
    startInformers();
    expect(await wait(pod)).toMatchObject({ outcome: 'refused' });
  });

  it('ends each of many waits on its own pod only: refused ones refused, the rest still waiting', async () => {
    startInformers();
    await synced();
    cluster.faults.neverReady(true);
    const pods = await Promise.all(Array.from({ length: 30 }, () => newPod(300)));
    const controller = new AbortController();
    const settled = new Map<string, ReadinessOutcome | 'aborted'>();
    const waits = pods.map((pod) =>
      wait(pod, controller.signal).then(
        (outcome) => settled.set(pod.uid, outcome),
        () => settled.set(pod.uid, 'aborted'),
      ),
    );
    const refused = pods.filter((_, index) => index % 3 === 0);
    for (const pod of refused) {
      cluster.node.recordSandboxFailure(
        NAMESPACE,
        pod.name,
        `${INVALID_ARGUMENT_MESSAGE} (${pod.name})`,
      );
    }
    // A non-decisive refusal of another pod ends nothing.
    cluster.node.recordSandboxFailure(
      NAMESPACE,
      (pods[1] as PodRef).name,
      'code = Unknown desc = [space-err=Unavailable] busy',
    );
    await waitUntil(() => settled.size === refused.length);
    // The informers hold the non-decisive refusal (and told its wait): still nothing more ended.
    const other = pods[1] as PodRef;
    await waitUntil(() => (informers as SandboxInformers).cachedEvents(other.uid).length === 1);
    expect(settled.size).toBe(refused.length);
    for (const pod of refused) {
      expect(settled.get(pod.uid)).toMatchObject({
        outcome: 'refused',
        reason: expect.stringContaining(`(${pod.name})`),
      });
    }
    controller.abort();
    await Promise.all(waits);
    expect(cluster.openWatches()).toBe(2);
    expectInformersOnly();
  });

  it('answers ready with the pod IP, and podFailed when the pod is deleted mid-wait', async () => {
    startInformers();
    await synced();
    const ready = await newPod(2048);
    expect(await wait(ready)).toMatchObject({
      outcome: 'ready',
      podIp: expect.stringMatching(/^10\./),
    });
    cluster.faults.neverReady(true);
    const deleted = await newPod(2048);
    const outcome = wait(deleted);
    await waitUntil(() => (informers as SandboxInformers).cachedPod(deleted.name) !== undefined);
    await client.core.deleteNamespacedPod({ name: deleted.name, namespace: NAMESPACE });
    expect(await outcome).toMatchObject({
      outcome: 'podFailed',
      reason: expect.stringContaining('deleted'),
    });
    expectInformersOnly();
  });

  it('never calls a pod with a deletionTimestamp ready, even with an IP: podFailed', async () => {
    startInformers();
    await synced();
    cluster.faults.neverReady(true);
    const pod = await newPod(2048);
    const outcome = wait(pod);
    await waitUntil(() => (informers as SandboxInformers).cachedPod(pod.name) !== undefined);
    cluster.node.markTerminating(NAMESPACE, pod.name);
    expect(await outcome).toMatchObject({
      outcome: 'podFailed',
      reason: expect.stringContaining('being deleted'),
    });
  });

  it('reads a pod the cache does not hold once, and ends podFailed when it is already gone', async () => {
    cluster.faults.neverReady(true);
    const pod = await newPod(2048);
    await client.core.deleteNamespacedPod({ name: pod.name, namespace: NAMESPACE });
    startInformers();
    await synced();
    expect(await wait(pod)).toMatchObject({
      outcome: 'podFailed',
      reason: expect.stringContaining('no longer exists'),
    });
    const podGets = cluster.requestsWhere({ verb: 'get', resource: 'pods', name: pod.name });
    expect(podGets).toHaveLength(1);
  });

  it('says why a pod that is gone went when nothing deleted it, and that any other was deleted', async () => {
    cluster.faults.neverReady(true);
    // Both gone before the informers listed: one the cluster's reset took, one a person deleted.
    const reset = await newPod(2048);
    const deleted = await newPod(2048);
    for (const pod of [reset, deleted]) {
      await client.core.deleteNamespacedPod({ name: pod.name, namespace: NAMESPACE });
    }
    const explained: string[] = [];
    startInformers({
      explainMissingPod: (pod) => {
        explained.push(pod.uid);
        return pod.uid === reset.uid
          ? 'the cluster restarted empty (nothing deleted it)'
          : undefined;
      },
    });
    await synced();
    const [resetOutcome, deletedOutcome] = await Promise.all([wait(reset), wait(deleted)]);
    expect(resetOutcome).toEqual({
      outcome: 'podFailed',
      reason: `pod ${reset.name} no longer exists; the cluster restarted empty (nothing deleted it)`,
    });
    expect(deletedOutcome).toEqual({
      outcome: 'podFailed',
      reason: `pod ${deleted.name} no longer exists; it was deleted before it had an IP`,
    });
    expect(explained.sort()).toEqual([reset.uid, deleted.uid].sort());
  });
});

describe('informers: watch failures', () => {
  beforeEach(() => startCluster());

  it('re-lists after a 410 and sees a deletion made in the gap', async () => {
    startInformers();
    await synced();
    cluster.faults.neverReady(true);
    const pod = await newPod(2048);
    const outcome = wait(pod);
    await waitUntil(() => (informers as SandboxInformers).cachedPod(pod.name) !== undefined);
    cluster.faults.failNextWatches('pods', 1, 410);
    cluster.faults.dropWatches('pods');
    await client.core.deleteNamespacedPod({ name: pod.name, namespace: NAMESPACE });
    expect(await outcome).toMatchObject({ outcome: 'podFailed' });
    expect(reads('pods').filter((r) => !r.watch)).toHaveLength(2);
  });

  it('re-lists after an in-stream 410 Expired and keeps serving waits', async () => {
    startInformers();
    await synced();
    cluster.faults.neverReady(true);
    const pod = await newPod(300);
    const outcome = wait(pod);
    cluster.faults.expireWatches('events');
    await waitUntil(
      () =>
        reads('events').filter((r) => !r.watch).length === 2 && cluster.openWatches('events') === 1,
    );
    cluster.node.recordSandboxFailure(NAMESPACE, pod.name, INVALID_ARGUMENT_MESSAGE);
    expect(await outcome).toMatchObject({ outcome: 'refused' });
  });

  it('events informer refused with 403 past its bound: one warning per worker, waits rely on the pod', async () => {
    cluster.faults.failNextWatches('events', 1_000, 403);
    startInformers({ backoffCapMs: 200, forbiddenBoundMs: 300 });
    const first = await newPod(2048);
    const second = await newPod(2048);
    expect(await wait(first)).toMatchObject({ outcome: 'ready' });
    expect(await wait(second)).toMatchObject({ outcome: 'ready' });
    await waitUntil(() => (informers as SandboxInformers).eventsDegraded);
    await waitUntil(() => reads('events').filter((r) => r.watch).length >= 3);
    const warnings = logged.filter((entry) => entry.level === 'warn');
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.message).toContain('list and watch on events');
    expect((informers as SandboxInformers).eventsDegraded).toBe(true);
  });

  it('pods informer refused with 403 past its bound: the wait ends naming the permission', async () => {
    cluster.faults.neverReady(true);
    const pod = await newPod(2048);
    cluster.faults.failNextRequests('GET', 'pods', 1_000, 403);
    startInformers({ forbiddenBoundMs: 500, backoffCapMs: 100 });
    const started = Date.now();
    const outcome = await wait(pod);
    expect(outcome).toMatchObject({
      outcome: 'watchRefused',
      reason: expect.stringContaining('grant list and watch on pods'),
    });
    expect((outcome as { reason: string }).reason).toContain('cannot list resource "pods"');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('403 for a while (a restarted apiserver syncing its RBAC caches), then served: the wait sees the IP', async () => {
    cluster.faults.neverReady(true);
    const pod = await newPod(2048);
    // The list is refused twice, then the watch twice, as a fresh kube-apiserver refuses them.
    cluster.faults.failNextRequests('GET', 'pods', 2, 403);
    cluster.faults.failNextWatches('pods', 2, 403);
    startInformers({ backoffCapMs: 200 });
    const outcome = wait(pod);
    await synced();
    cluster.node.makeReady(NAMESPACE, pod.name);
    expect(await outcome).toMatchObject({ outcome: 'ready' });
    expect(reads('pods').map((r) => r.status)).toEqual(
      expect.arrayContaining([403, 403, 403, 403, 200]),
    );
    expect(logged.filter((entry) => entry.level === 'error')).toEqual([]);
  });

  it('401 for a while, then served: the wait still sees the IP and the refusal', async () => {
    cluster.faults.neverReady(true);
    cluster.faults.failNextWatches('pods', 4, 401);
    cluster.faults.failNextWatches('events', 4, 401);
    startInformers({ unauthorizedBoundMs: 60_000 });
    const ready = await newPod(2048);
    const refused = await newPod(300);
    const readyOutcome = wait(ready);
    const refusedOutcome = wait(refused);
    await synced();
    cluster.node.makeReady(NAMESPACE, ready.name);
    cluster.node.recordSandboxFailure(NAMESPACE, refused.name, INVALID_ARGUMENT_MESSAGE);
    expect(await readyOutcome).toMatchObject({ outcome: 'ready' });
    expect(await refusedOutcome).toMatchObject({ outcome: 'refused' });
    expect(
      reads('pods')
        .filter((r) => r.watch)
        .map((r) => r.status),
    ).toEqual([401, 401, 401, 401, 200]);
  });

  it('401 past its bound ends the waits loudly', async () => {
    cluster.faults.neverReady(true);
    cluster.faults.failNextWatches('pods', 1_000, 401);
    startInformers({ unauthorizedBoundMs: 500, backoffCapMs: 100 });
    const pod = await newPod(2048);
    const outcome = await wait(pod);
    expect(outcome).toMatchObject({
      outcome: 'watchRefused',
      reason: expect.stringContaining('HTTP 401'),
    });
    expect(logged.some((entry) => entry.level === 'error')).toBe(true);
  });

  it('keeps a wait alive while the apiserver is gone and catches up after', async () => {
    startInformers();
    await synced();
    cluster.faults.neverReady(true);
    const pod = await newPod(2048);
    const outcome = wait(pod);
    await waitUntil(() => (informers as SandboxInformers).cachedPod(pod.name) !== undefined);
    cluster.faults.failNextWatches('pods', 3, 503);
    cluster.faults.dropWatches('pods');
    cluster.node.makeReady(NAMESPACE, pod.name);
    expect(await outcome).toMatchObject({ outcome: 'ready' });
    expect(
      reads('pods')
        .filter((r) => r.watch)
        .map((r) => r.status),
    ).toEqual([200, 503, 503, 503, 200]);
  });
});

describe('informers: cost', () => {
  it('a quiet pod waiting while other pods churn costs one LIST: bookmarks keep the version fresh', async () => {
    await startCluster({ historyLimit: 20 });
    startInformers({ watchTimeoutSeconds: 1 });
    await synced();
    cluster.faults.neverReady(true);
    const pod = await newPod(2048);
    const controller = new AbortController();
    const outcome = wait(pod, controller.signal).catch(() => 'aborted');
    // Other pods (no sandbox label) churn far past the history while ours stays quiet.
    for (let round = 0; round < 5; round++) {
      for (let i = 0; i < 30; i++) {
        const name = `other-${round}-${i}`;
        await client.core.createNamespacedPod({
          namespace: NAMESPACE,
          body: { metadata: { name }, spec: { containers: [{ name: 'c', image: 'i' }] } },
        });
        await client.core.deleteNamespacedPod({ name, namespace: NAMESPACE });
      }
      // The pods watch times out (1 s) and re-opens from its bookmark's version.
      const watches = reads('pods').filter((r) => r.watch).length;
      await waitUntil(() => reads('pods').filter((r) => r.watch).length > watches, {
        what: `the pods watch re-opened after churn round ${round}`,
      });
    }
    controller.abort();
    expect(await outcome).toBe('aborted');
    const podWatches = reads('pods').filter((r) => r.watch);
    expect(podWatches.length).toBeGreaterThanOrEqual(4);
    expect(reads('pods').filter((r) => !r.watch)).toHaveLength(1);
    expectInformersOnly();
  }, 60_000);

  it('shares one connection pool: connections stay few however many requests', async () => {
    await startCluster();
    for (let i = 0; i < 20; i++) await client.core.listNamespacedPod({ namespace: NAMESPACE });
    expect(cluster.connectionsAccepted).toBeLessThanOrEqual(2);
  });
});

describe('informers: the events cache is bounded', () => {
  beforeEach(() => startCluster());

  it("evicts a pod's events when the pod is deleted, and other pods' events after the grace", async () => {
    const active = startInformers({ unknownPodEventGraceMs: 1_000 });
    await synced();
    cluster.faults.neverReady(true);
    const pod = await newPod(300);
    cluster.node.recordSandboxFailure(NAMESPACE, pod.name, INVALID_ARGUMENT_MESSAGE);
    // A refusal of a pod that is not a sandbox pod (no sandbox-id label).
    await client.core.createNamespacedPod({
      namespace: NAMESPACE,
      body: { metadata: { name: 'other' }, spec: { containers: [{ name: 'c', image: 'i' }] } },
    });
    cluster.node.recordSandboxFailure(NAMESPACE, 'other', INVALID_ARGUMENT_MESSAGE);
    await waitUntil(() => active.eventsCacheSize === 2);
    expect(active.cachedEvents(pod.uid)).toHaveLength(1);
    // Not a sandbox pod: evicted once the grace has passed.
    await waitUntil(() => active.eventsCacheSize === 1, { timeoutMs: 10_000 });
    expect(active.cachedEvents(pod.uid)).toHaveLength(1);
    // Its pod deleted: evicted at once.
    await client.core.deleteNamespacedPod({ name: pod.name, namespace: NAMESPACE });
    await waitUntil(() => active.eventsCacheSize === 0);
    expect(active.cachedEvents(pod.uid)).toHaveLength(0);
  });
});

describe('podOutcome (pure)', () => {
  const pod = (fields: Record<string, unknown>) =>
    ({ metadata: { name: 'p', uid: 'u', ...fields }, status: { podIP: '10.0.0.1' } }) as never;

  it('a pod with a deletionTimestamp and an IP is not ready', () => {
    expect(podOutcome('MODIFIED', pod({ deletionTimestamp: new Date() }), 'u')).toMatchObject({
      outcome: 'podFailed',
    });
    expect(podOutcome('MODIFIED', pod({}), 'u')).toMatchObject({ outcome: 'ready' });
  });
});
