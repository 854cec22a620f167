/**
 * The simulated cluster (docs/architecture.md, "The simulated cluster"), exercised the way the
 * service uses it: over
 * HTTP through @kubernetes/client-node (CoreV1Api, Watch); raw fetch only to check wire format.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  Watch,
  type CoreV1Event,
  type V1Pod,
  type V1Status,
} from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  SimulatedCluster,
  type SimulatedClusterOptions,
} from '../environments/simulated-cluster/index.js';

const NS = 'sandboxes';
const EVENTS = `/api/v1/namespaces/${NS}/events`;
const PODS = `/api/v1/namespaces/${NS}/pods`;
const REFUSAL_300 =
  'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument] rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB';
const WAIT = { timeout: 15_000, interval: 20 };

let cluster: SimulatedCluster | undefined;

afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start(options: SimulatedClusterOptions = {}) {
  cluster = await SimulatedCluster.start({
    startupDelayMs: 50,
    refusalBackoffMs: 100,
    refusalBackoffMaxMs: 400,
    ...options,
  });
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfigYaml());
  return { sim: cluster, kc, core: kc.makeApiClient(CoreV1Api) };
}

function sandboxPod(name: string, diskMib: number, labels: Record<string, string> = {}): V1Pod {
  return {
    metadata: {
      name,
      labels,
      annotations: {
        'durable-sandbox.dev/template': 'base',
        'durable-sandbox.dev/disk-mib': String(diskMib),
      },
    },
    spec: { containers: [{ name: 'sandbox', image: 'ghcr.io/durable-sandbox/base:1' }] },
  };
}

interface Seen<T> {
  type: string;
  object: T;
}

/** Opens a client-node watch; `done` resolves with what the done callback received. */
async function openWatch<T>(kc: KubeConfig, path: string, query: Record<string, string>) {
  const seen: Array<Seen<T>> = [];
  let finish: (err: unknown) => void = () => {};
  const done = new Promise<unknown>((resolve) => (finish = resolve));
  const controller = await new Watch(kc).watch(
    path,
    query,
    (type: string, object: T) => seen.push({ type, object }),
    (err: unknown) => finish(err),
  );
  return { seen, done, controller };
}

/** The ApiException a client call rejects with (fails the test when it resolves). */
async function apiError(call: Promise<unknown>): Promise<{ code: number; status: V1Status }> {
  try {
    await call;
  } catch (err) {
    if (err instanceof ApiException) {
      return { code: err.code, status: JSON.parse(String(err.body)) as V1Status };
    }
    throw err;
  }
  throw new Error('expected the call to fail with an ApiException');
}

describe('simulated cluster: pods over CoreV1Api', () => {
  it('creates, gets, lists and deletes a pod', async () => {
    const { core } = await start();
    const created = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('p1', 2048) });
    expect(created.metadata?.uid).toMatch(/^[0-9a-f-]{36}$/);
    expect(Number(created.metadata?.resourceVersion)).toBeGreaterThan(0);
    expect(created.metadata?.namespace).toBe(NS);
    expect(created.metadata?.creationTimestamp).toBeInstanceOf(Date);
    expect(created.status?.phase).toBe('Pending');

    const got = await core.readNamespacedPod({ namespace: NS, name: 'p1' });
    expect(got.metadata?.uid).toBe(created.metadata?.uid);
    expect(got.spec?.nodeName).toBe('sim-node-1');

    const list = await core.listNamespacedPod({ namespace: NS });
    expect(list.items.map((p) => p.metadata?.name)).toEqual(['p1']);
    expect(Number(list.metadata?.resourceVersion)).toBeGreaterThanOrEqual(
      Number(got.metadata?.resourceVersion),
    );

    const deleted = await core.deleteNamespacedPod({
      namespace: NS,
      name: 'p1',
      body: { preconditions: { uid: created.metadata?.uid } },
    });
    expect(deleted.metadata?.uid).toBe(created.metadata?.uid);
    expect((await apiError(core.readNamespacedPod({ namespace: NS, name: 'p1' }))).code).toBe(404);
  });

  it('answers 409 AlreadyExists for a pod name already taken', async () => {
    const { core } = await start();
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('dup', 2048) });
    const { code, status } = await apiError(
      core.createNamespacedPod({ namespace: NS, body: sandboxPod('dup', 2048) }),
    );
    expect(code).toBe(409);
    expect(status.reason).toBe('AlreadyExists');
  });

  it('refuses a delete whose uid precondition does not match with 409 and keeps the pod', async () => {
    const { core } = await start();
    const created = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('p2', 2048) });
    const { code, status } = await apiError(
      core.deleteNamespacedPod({
        namespace: NS,
        name: 'p2',
        body: { preconditions: { uid: 'not-the-uid' } },
      }),
    );
    expect(code).toBe(409);
    expect(status.reason).toBe('Conflict');
    // Worded as a real kube-apiserver words it (test/real-apiserver.test.ts compares the two).
    expect(status.message).toBe(
      `Operation cannot be fulfilled on Pod "p2": the UID in the precondition (not-the-uid) does ` +
        `not match the UID in record (${created.metadata?.uid}). The object might have been ` +
        'deleted and then recreated',
    );
    expect(status.details).toEqual({ name: 'p2', kind: 'Pod' });
    const survivor = await core.readNamespacedPod({ namespace: NS, name: 'p2' });
    expect(survivor.metadata?.uid).toBe(created.metadata?.uid);
  });

  it('answers 404 NotFound for a delete of an absent pod', async () => {
    const { core } = await start();
    const { code, status } = await apiError(
      core.deleteNamespacedPod({ namespace: NS, name: 'ghost' }),
    );
    expect(code).toBe(404);
    expect(status).toMatchObject({
      kind: 'Status',
      status: 'Failure',
      reason: 'NotFound',
      message: 'pods "ghost" not found',
      code: 404,
    });
  });

  it('lists pods by label selector', async () => {
    const { core } = await start();
    await core.createNamespacedPod({
      namespace: NS,
      body: sandboxPod('a', 2048, { app: 'x', tier: 'web' }),
    });
    await core.createNamespacedPod({
      namespace: NS,
      body: sandboxPod('b', 2048, { app: 'x', tier: 'db' }),
    });
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('c', 2048, { app: 'y' }) });
    const names = async (labelSelector: string) =>
      (await core.listNamespacedPod({ namespace: NS, labelSelector })).items.map(
        (p) => p.metadata?.name,
      );
    expect(await names('app=x')).toEqual(['a', 'b']);
    expect(await names('app=x,tier=db')).toEqual(['b']);
    expect(await names('app!=x')).toEqual(['c']);
  });

  it('answers a scripted request fault once, then serves normally', async () => {
    const { sim, core } = await start();
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('f', 2048) });
    sim.faults.failNextRequests('DELETE', 'pods', 1, 500);
    const { code, status } = await apiError(core.deleteNamespacedPod({ namespace: NS, name: 'f' }));
    expect(code).toBe(500);
    expect(status.reason).toBe('InternalError');
    await core.deleteNamespacedPod({ namespace: NS, name: 'f' });
  });
});

describe('simulated cluster: the node', () => {
  it('refuses a 300 MiB disk with a kubelet-shaped event naming the 451 MiB rootfs, then bumps its count', async () => {
    const { kc, core } = await start();
    const pod = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('small', 300) });
    const uid = pod.metadata?.uid ?? '';
    const events = await openWatch<CoreV1Event>(kc, EVENTS, {
      resourceVersion: '0',
      fieldSelector: `involvedObject.uid=${uid},reason=FailedCreatePodSandBox`,
    });
    await vi.waitFor(() => expect(events.seen.map((e) => e.type)).toContain('MODIFIED'), WAIT);
    events.controller.abort();
    const [first, bump] = events.seen;
    expect(first?.type).toBe('ADDED');
    expect(first?.object).toMatchObject({
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { namespace: NS },
      involvedObject: { kind: 'Pod', namespace: NS, name: 'small', uid, apiVersion: 'v1' },
      reason: 'FailedCreatePodSandBox',
      message: REFUSAL_300,
      type: 'Warning',
      source: { component: 'kubelet', host: 'sim-node-1' },
      reportingComponent: 'kubelet',
      reportingInstance: 'sim-node-1',
      count: 1,
      eventTime: null,
    });
    expect(first?.object.metadata?.name).toMatch(/^small\.[0-9a-f]+$/);
    expect(bump?.object.metadata?.name).toBe(first?.object.metadata?.name);
    expect(bump?.object.count).toBe(2);
    expect(Number(bump?.object.metadata?.resourceVersion)).toBeGreaterThan(
      Number(first?.object.metadata?.resourceVersion),
    );
  });

  it('aggregates repeats after ten occurrences into a "(combined from similar events)" event', async () => {
    const { kc, core } = await start({ refusalBackoffMs: 5, refusalBackoffMaxMs: 10 });
    const pod = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('agg', 300) });
    const events = await openWatch<CoreV1Event>(kc, EVENTS, {
      fieldSelector: `involvedObject.uid=${pod.metadata?.uid}`,
    });
    await vi.waitFor(
      () =>
        expect(events.seen.map((e) => e.object.message)).toContain(
          `(combined from similar events): ${REFUSAL_300}`,
        ),
      WAIT,
    );
    events.controller.abort();
    const original = events.seen.filter((e) => e.object.message === REFUSAL_300);
    expect(original.at(-1)?.object.count).toBe(10);
  });

  it('gives a 2048 MiB pod an IP', async () => {
    const { kc, core } = await start();
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('big', 2048) });
    const pods = await openWatch<V1Pod>(kc, PODS, { fieldSelector: 'metadata.name=big' });
    await vi.waitFor(
      () => expect(pods.seen.some((e) => e.object.status?.podIP !== undefined)).toBe(true),
      WAIT,
    );
    pods.controller.abort();
    const ready = pods.seen.find((e) => e.object.status?.podIP !== undefined);
    expect(ready?.object.status?.podIP).toMatch(/^10\.244\.0\.\d+$/);
    expect(ready?.object.status?.phase).toBe('Running');
    expect(ready?.object.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'Ready', status: 'True' }),
    );
    expect(ready?.object.spec?.nodeName).toBe('sim-node-1');
  });

  it('refuses with a scripted Unavailable code instead of deciding by disk', async () => {
    const { sim, kc, core } = await start();
    sim.faults.refuseWith('Unavailable', 'failed to reserve sandbox name');
    const pod = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('busy', 2048) });
    const events = await openWatch<CoreV1Event>(kc, EVENTS, {
      resourceVersion: '0',
      fieldSelector: `involvedObject.uid=${pod.metadata?.uid}`,
    });
    await vi.waitFor(() => expect(events.seen.length).toBeGreaterThan(0), WAIT);
    events.controller.abort();
    expect(events.seen[0]?.object.message).toBe(
      'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=Unavailable] failed to reserve sandbox name',
    );
    expect((await core.readNamespacedPod({ namespace: NS, name: 'busy' })).status?.podIP).toBe(
      undefined,
    );
  });

  it('does nothing for a pod while neverReady is on', async () => {
    const { sim, core } = await start({ startupDelayMs: 20 });
    sim.faults.neverReady(true);
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('stuck', 300) });
    // A sleep: that nothing happens is what is proved, past the node's 20 ms startup delay.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const pod = await core.readNamespacedPod({ namespace: NS, name: 'stuck' });
    expect(pod.status?.phase).toBe('Pending');
    expect((await core.listNamespacedEvent({ namespace: NS })).items).toEqual([]);
  });

  it('reports a pod failed by the node as phase Failed', async () => {
    const { sim, kc, core } = await start();
    sim.faults.neverReady(true);
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('doomed', 2048) });
    const pods = await openWatch<V1Pod>(kc, PODS, { fieldSelector: 'metadata.name=doomed' });
    sim.node.failPod(NS, 'doomed', 'Evicted');
    await vi.waitFor(
      () =>
        expect(pods.seen.at(-1)?.object.status).toMatchObject({
          phase: 'Failed',
          reason: 'Evicted',
        }),
      WAIT,
    );
    pods.controller.abort();
  });
});

describe('simulated cluster: watches through client-node', () => {
  it('replays an already-recorded refusal as ADDED to an events watch from resourceVersion 0', async () => {
    const { sim, kc, core } = await start();
    sim.faults.neverReady(true);
    const pod = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('early', 300) });
    const uid = pod.metadata?.uid ?? '';
    sim.node.recordSandboxFailure(NS, 'early', REFUSAL_300);
    await core.createNamespacedEvent({
      namespace: NS,
      body: {
        metadata: { name: 'early.normal' },
        involvedObject: { kind: 'Pod', namespace: NS, name: 'early', uid },
        reason: 'Scheduled',
        type: 'Normal',
        message: 'Successfully assigned sandboxes/early to sim-node-1',
      },
    });
    const events = await openWatch<CoreV1Event>(kc, EVENTS, {
      resourceVersion: '0',
      fieldSelector: `involvedObject.uid=${uid},reason=FailedCreatePodSandBox`,
    });
    await vi.waitFor(() => expect(events.seen.length).toBe(1), WAIT);
    events.controller.abort();
    expect(events.seen[0]?.type).toBe('ADDED');
    expect(events.seen[0]?.object.message).toBe(REFUSAL_300);
  });

  it('answers a pods watch from a too-old resourceVersion with an in-stream 410 Expired ERROR', async () => {
    const { kc, core } = await start({ historyLimit: 3 });
    for (const name of ['o1', 'o2', 'o3']) {
      await core.createNamespacedPod({ namespace: NS, body: sandboxPod(name, 2048) });
    }
    const pods = await openWatch<V1Status>(kc, PODS, { resourceVersion: '1' });
    expect(await pods.done).toBeNull();
    expect(pods.seen).toHaveLength(1);
    expect(pods.seen[0]?.type).toBe('ERROR');
    expect(pods.seen[0]?.object).toMatchObject({ kind: 'Status', code: 410, reason: 'Expired' });
  });

  it('resumes a pods watch from a recent resourceVersion with only the later changes', async () => {
    const { kc, core } = await start({ startupDelayMs: 60_000 });
    const first = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('r1', 2048) });
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('r2', 2048) });
    const pods = await openWatch<V1Pod>(kc, PODS, {
      resourceVersion: first.metadata?.resourceVersion ?? '',
    });
    // r1's binding (MODIFIED), r2's creation and r2's binding.
    await vi.waitFor(() => expect(pods.seen).toHaveLength(3), WAIT);
    pods.controller.abort();
    expect(pods.seen.map((e) => [e.type, e.object.metadata?.name])).toEqual([
      ['MODIFIED', 'r1'],
      ['ADDED', 'r2'],
      ['MODIFIED', 'r2'],
    ]);
  });

  it('reports a watch answered 429 to the done callback with statusCode 429, and the next watch works', async () => {
    const { sim, kc, core } = await start();
    sim.faults.neverReady(true);
    const pod = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('t', 300) });
    sim.node.recordSandboxFailure(NS, 't', REFUSAL_300);
    sim.faults.failNextWatches('events', 1, 429);
    const query = {
      resourceVersion: '0',
      fieldSelector: `involvedObject.uid=${pod.metadata?.uid}`,
    };

    const refused = await openWatch<CoreV1Event>(kc, EVENTS, query);
    const err = (await refused.done) as Error & { statusCode?: number };
    expect(err).toBeInstanceOf(Error);
    expect(err.statusCode).toBe(429);
    expect(err.message).toBe('Too Many Requests');
    expect(refused.seen).toEqual([]);

    const next = await openWatch<CoreV1Event>(kc, EVENTS, query);
    await vi.waitFor(() => expect(next.seen.map((e) => e.type)).toEqual(['ADDED']), WAIT);
    next.controller.abort();
    expect(sim.requestsWhere({ verb: 'watch' }).map((r) => r.status)).toEqual([429, 200]);
  });

  it('sends a Kubernetes Status body with a faulted watch', async () => {
    const { sim } = await start();
    sim.faults.failNextWatches('events', 1, 403);
    sim.faults.failNextWatches('pods', 1, 429);
    const forbidden = await fetch(`${sim.url}${EVENTS}?watch=true`);
    expect(forbidden.status).toBe(403);
    expect(forbidden.headers.get('content-type')).toBe('application/json');
    expect(await forbidden.json()).toMatchObject({
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      reason: 'Forbidden',
      code: 403,
      message: expect.stringContaining('cannot watch resource "events"'),
    });
    const throttled = await fetch(`${sim.url}${PODS}?watch=true`);
    expect(throttled.status).toBe(429);
    expect(throttled.headers.get('retry-after')).toBe('1');
    expect(await throttled.json()).toMatchObject({ reason: 'TooManyRequests', code: 429 });
  });

  it('ends client watches cleanly with endWatches: done(null)', async () => {
    const { sim, kc } = await start();
    const pods = await openWatch(kc, PODS, {});
    await vi.waitFor(() => expect(sim.openWatches('pods')).toBe(1), WAIT);
    sim.faults.endWatches('pods');
    expect(await pods.done).toBeNull();
    await vi.waitFor(() => expect(sim.openWatches()).toBe(0), WAIT);
  });

  it('drops client watches with dropWatches: done(error)', async () => {
    const { sim, kc } = await start();
    const events = await openWatch(kc, EVENTS, {});
    await vi.waitFor(() => expect(sim.openWatches('events')).toBe(1), WAIT);
    sim.faults.dropWatches();
    // client-node 2.0.1 (undici): TypeError 'terminated', cause SocketError 'other side closed'.
    const err = (await events.done) as Error & { statusCode?: number };
    expect(err).toBeInstanceOf(Error);
    expect(err.statusCode).toBeUndefined();
    await vi.waitFor(() => expect(sim.openWatches()).toBe(0), WAIT);
  });

  it('expires open watches with an in-stream 410 ERROR, then ends them', async () => {
    const { sim, kc } = await start();
    const pods = await openWatch<V1Status>(kc, PODS, {});
    await vi.waitFor(() => expect(sim.openWatches('pods')).toBe(1), WAIT);
    sim.faults.expireWatches('pods');
    expect(await pods.done).toBeNull();
    expect(pods.seen).toEqual([
      { type: 'ERROR', object: expect.objectContaining({ code: 410, reason: 'Expired' }) },
    ]);
  });

  it('keeps a silenced watch open without sending any event', async () => {
    const { sim, kc, core } = await start({ startupDelayMs: 60_000 });
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('quiet', 2048) });
    sim.faults.silence('pods', true);
    const pods = await openWatch(kc, PODS, {});
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('quiet2', 2048) });
    // A sleep: that the silenced watch sends nothing is what is proved.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(sim.openWatches('pods')).toBe(1);
    expect(pods.seen).toEqual([]);
    pods.controller.abort();
  });

  it('ends a watch after timeoutSeconds', async () => {
    const { kc, sim } = await start();
    const started = Date.now();
    const events = await openWatch(kc, EVENTS, { timeoutSeconds: '1' });
    expect(await events.done).toBeNull();
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    expect(sim.openWatches()).toBe(0);
  });

  it('counts open watches back to 0 after the client aborts', async () => {
    const { sim, kc } = await start();
    const pods = await openWatch(kc, PODS, {});
    const events = await openWatch(kc, EVENTS, { resourceVersion: '0' });
    await vi.waitFor(() => expect(sim.openWatches()).toBe(2), WAIT);
    expect(sim.openWatches('pods')).toBe(1);
    expect(sim.openWatches('events')).toBe(1);
    pods.controller.abort();
    events.controller.abort();
    await vi.waitFor(() => expect(sim.openWatches()).toBe(0), WAIT);
  });

  it('delays responses when scripted', async () => {
    const { sim, core } = await start();
    sim.faults.delayResponses(300);
    const started = Date.now();
    await core.listNamespacedPod({ namespace: NS });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });
});

describe('simulated cluster: request log, wire format and kubectl support', () => {
  it('records every request with its query fields, status and watch flag', async () => {
    const { sim, kc, core } = await start();
    await core.listNamespacedPod({ namespace: NS, labelSelector: 'app=x' });
    const events = await openWatch(kc, EVENTS, {
      resourceVersion: '0',
      fieldSelector: 'involvedObject.uid=u1,reason=FailedCreatePodSandBox',
    });
    await vi.waitFor(() => expect(sim.requests).toHaveLength(2), WAIT);
    events.controller.abort();
    const [list, watch] = sim.requests;
    expect(list).toMatchObject({
      method: 'GET',
      path: PODS,
      query: { labelSelector: 'app=x' },
      status: 200,
      watch: false,
    });
    expect(watch).toMatchObject({
      method: 'GET',
      path: EVENTS,
      query: {
        watch: 'true',
        resourceVersion: '0',
        fieldSelector: 'involvedObject.uid=u1,reason=FailedCreatePodSandBox',
      },
      status: 200,
      watch: true,
    });
    expect(typeof watch?.at).toBe('number');
  });

  it('answers requestsWhere with exactly the requests of the verb, resource, namespace, name, status and time asked', async () => {
    const { sim, kc, core } = await start({ startupDelayMs: 60_000 });
    const created = await core.createNamespacedPod({ namespace: NS, body: sandboxPod('q1', 2048) });
    await core.createNamespacedPod({ namespace: 'other', body: sandboxPod('q2', 2048) });
    await core.readNamespacedPod({ namespace: NS, name: 'q1' });
    await core.listNamespacedPod({ namespace: NS });
    const pods = await openWatch(kc, PODS, {});
    await vi.waitFor(() => expect(sim.openWatches('pods')).toBe(1), WAIT);
    pods.controller.abort();
    const mark = sim.requestMark();
    await new Promise((resolve) => setTimeout(resolve, 5));
    const afterMark = Date.now();
    const unconditional = { ...created, metadata: { ...created.metadata, resourceVersion: '' } };
    await core.replaceNamespacedPod({ namespace: NS, name: 'q1', body: unconditional });
    await core.listNamespacedEvent({ namespace: NS });
    await fetch(`${sim.url}${PODS}/q1/status`);
    await fetch(`${sim.url}/version`);
    await core.deleteNamespacedPod({
      namespace: NS,
      name: 'q1',
      body: { preconditions: { uid: created.metadata?.uid } },
    });
    await apiError(core.deleteNamespacedPod({ namespace: NS, name: 'absent' }));

    const seen = (query: Parameters<SimulatedCluster['requestsWhere']>[0]) =>
      sim
        .requestsWhere(query)
        .map((r) => `${r.method} ${r.path}${r.watch ? ' watch' : ''} ${r.status}`);
    expect(seen({ verb: 'create', resource: 'pods' })).toEqual([
      `POST ${PODS} 201`,
      'POST /api/v1/namespaces/other/pods 201',
    ]);
    expect(seen({ verb: 'create', resource: 'pods', namespace: NS })).toEqual([`POST ${PODS} 201`]);
    expect(seen({ verb: 'create', name: 'q2' })).toEqual([
      'POST /api/v1/namespaces/other/pods 201',
    ]);
    expect(seen({ verb: 'get', resource: 'pods', name: 'q1' })).toEqual([`GET ${PODS}/q1 200`]);
    expect(seen({ verb: 'list', resource: 'pods' })).toEqual([`GET ${PODS} 200`]);
    expect(seen({ verb: 'watch' })).toEqual([`GET ${PODS} watch 200`]);
    expect(seen({ verb: ['list', 'watch'], resource: ['pods', 'events'], namespace: NS })).toEqual([
      `GET ${PODS} 200`,
      `GET ${PODS} watch 200`,
      `GET ${EVENTS} 200`,
    ]);
    expect(seen({ verb: 'update', resource: 'pods', name: 'q1' })).toEqual([`PUT ${PODS}/q1 200`]);
    expect(seen({ resource: 'pods/status' })).toEqual([`GET ${PODS}/q1/status 404`]);
    expect(seen({ verb: 'delete', resource: 'pods', namespace: NS })).toEqual([
      `DELETE ${PODS}/q1 200`,
      `DELETE ${PODS}/absent 404`,
    ]);
    expect(seen({ verb: 'delete', status: 404 })).toEqual([`DELETE ${PODS}/absent 404`]);
    expect(seen({ verb: ['create', 'delete'], name: ['q2', 'absent'] })).toEqual([
      'POST /api/v1/namespaces/other/pods 201',
      `DELETE ${PODS}/absent 404`,
    ]);
    expect(sim.requestsWhere({ verb: 'delete', name: 'q1' }).map((r) => r.deleteOptions)).toEqual([
      { preconditions: { uid: created.metadata?.uid } },
    ]);
    // A non-resource request has the method as its verb and no resource.
    expect(seen({ verb: 'get' })).toEqual([
      `GET ${PODS}/q1 200`,
      `GET ${PODS}/q1/status 404`,
      'GET /version 200',
    ]);
    expect(seen({ after: mark })).toEqual(seen({ since: afterMark }));
    expect(seen({ after: mark })).toEqual([
      `PUT ${PODS}/q1 200`,
      `GET ${EVENTS} 200`,
      `GET ${PODS}/q1/status 404`,
      'GET /version 200',
      `DELETE ${PODS}/q1 200`,
      `DELETE ${PODS}/absent 404`,
    ]);
    expect(sim.requestsWhere({ verb: 'delete', after: sim.requestMark() })).toEqual([]);
    expect(sim.requestsWhere()).toEqual(sim.requests);
    expect(sim.requests[0]).toMatchObject({
      verb: 'create',
      resource: 'pods',
      namespace: NS,
      name: 'q1',
    });
  });

  it('rejects an unsupported field selector with 400 BadRequest', async () => {
    const { core } = await start();
    const { code, status } = await apiError(
      core.listNamespacedEvent({ namespace: NS, fieldSelector: 'spec.foo=bar' }),
    );
    expect(code).toBe(400);
    expect(status).toMatchObject({
      reason: 'BadRequest',
      message: 'field label not supported: spec.foo',
    });
  });

  it('filters events with !=, == and comma-joined field selectors', async () => {
    const { sim, core } = await start();
    sim.faults.neverReady(true);
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('e1', 300) });
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('e2', 300) });
    sim.node.recordSandboxFailure(NS, 'e1', REFUSAL_300);
    sim.node.recordSandboxFailure(NS, 'e2', REFUSAL_300);
    const names = async (fieldSelector: string) =>
      (await core.listNamespacedEvent({ namespace: NS, fieldSelector })).items.map(
        (e) => e.involvedObject.name,
      );
    expect(await names('involvedObject.name==e1,type=Warning')).toEqual(['e1']);
    expect(await names('involvedObject.name!=e1')).toEqual(['e2']);
    expect(await names('reason=Scheduled')).toEqual([]);
  });

  it('serves discovery documents kubectl can use', async () => {
    const { sim } = await start();
    const json = async (path: string) => (await fetch(`${sim.url}${path}`)).json();
    expect(await json('/api')).toMatchObject({ kind: 'APIVersions', versions: ['v1'] });
    expect(await json('/apis')).toMatchObject({ kind: 'APIGroupList', groups: [] });
    expect(await json('/version')).toMatchObject({ gitVersion: 'v1.31.0-sim' });
    const resources = (await json('/api/v1')) as { resources: Array<Record<string, unknown>> };
    expect(resources.resources).toEqual([
      expect.objectContaining({ name: 'pods', kind: 'Pod', namespaced: true, shortNames: ['po'] }),
      expect.objectContaining({
        name: 'events',
        kind: 'Event',
        namespaced: true,
        shortNames: ['ev'],
      }),
    ]);
    expect((await fetch(`${sim.url}/openapi/v2`)).status).toBe(404);
  });

  it('prints a Table when kubectl asks for one', async () => {
    const { sim, core } = await start({ startupDelayMs: 60_000 });
    await core.createNamespacedPod({ namespace: NS, body: sandboxPod('tab', 2048) });
    const res = await fetch(`${sim.url}${PODS}?limit=500`, {
      headers: {
        accept:
          'application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json',
      },
    });
    const table = (await res.json()) as {
      kind: string;
      columnDefinitions: Array<{ name: string }>;
      rows: Array<{ cells: unknown[]; object: { metadata: { name: string } } }>;
    };
    expect(table.kind).toBe('Table');
    expect(table.columnDefinitions.map((c) => c.name).slice(0, 5)).toEqual([
      'Name',
      'Ready',
      'Status',
      'Restarts',
      'Age',
    ]);
    expect(table.rows[0]?.cells.slice(0, 4)).toEqual(['tab', '0/1', 'ContainerCreating', '0']);
    expect(table.rows[0]?.object.metadata.name).toBe('tab');
  });

  it('writes a kubeconfig that client-node loads', async () => {
    const { sim } = await start();
    const dir = mkdtempSync(join(tmpdir(), 'sim-kubeconfig-'));
    const path = join(dir, 'nested', 'kubeconfig');
    sim.writeKubeconfig(path);
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    rmSync(dir, { recursive: true, force: true });
    expect(kc.getCurrentContext()).toBe('simulated');
    expect(kc.getCurrentCluster()?.server).toBe(sim.url);
    expect(kc.getCurrentUser()?.token).toBe('simulated');
  });
});
