/**
 * What the service relies on from the apiserver, checked on a real kube-apiserver + etcd (with
 * the node agent in kubelet's place): the events watch the readiness wait opens (field selector
 * on `involvedObject.uid` and `reason`, replay from `resourceVersion=0`), bookmarks, the uid
 * precondition of every pod delete, the Status bodies of the answers the service handles (the
 * simulated apiserver must answer the same), and a server-side dry run of every deploy/ file.
 */
import { randomUUID } from 'node:crypto';
import diagnostics from 'node:diagnostics_channel';
import { readdirSync, readFileSync } from 'node:fs';
import {
  CoordinationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  Watch,
  type KubernetesObject,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createKubernetesClient, httpStatusOf } from '../src/kubernetes/client.js';
import { sandboxPod } from '../src/kubernetes/pod-spec.js';
import { deletePod } from '../src/kubernetes/pods.js';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { startRealTier, type RealTier } from './support/real-tier.js';
import { waitUntil } from '../tools/wait-until.js';

let real: RealTier;
let simulated: SimulatedCluster;
let namespace: string;
// A cold build of etcd and kube-apiserver (apiserver-tier/binaries.ts) may run in this hook.
beforeAll(async () => {
  real = await startRealTier();
  namespace = await real.freshNamespace('api');
  simulated = await SimulatedCluster.start({ startupDelayMs: 100 });
}, 20 * 60_000);
afterAll(async () => {
  await simulated?.close();
  await real?.stop();
});

function podBody(diskMib: number) {
  const sandboxId = `sbx_${randomUUID().replace(/-/g, '').slice(0, 20)}`;
  return sandboxPod({
    sandboxId,
    generation: 1,
    template: 'base',
    image: 'example/base:1',
    resources: { cpu: 1, memoryMib: 256, diskMib },
  });
}

/** The `durable-sandbox` user's client in the suite's namespace. */
function serviceCore(ns = namespace): CoreV1Api {
  return real.tier.kubeConfig('durable-sandbox', ns).makeApiClient(CoreV1Api);
}

interface WatchedEvent {
  type: string;
  object: Record<string, unknown> & {
    metadata?: { resourceVersion?: string; annotations?: Record<string, string> };
  };
}

/** Opens a watch and collects what it sends until `until` is true of the list, or `timeoutMs`. */
async function collectWatch(
  config: KubeConfig,
  path: string,
  query: Record<string, string | number | boolean | undefined>,
  until: (events: WatchedEvent[]) => boolean,
  timeoutMs = 30_000,
): Promise<WatchedEvent[]> {
  const events: WatchedEvent[] = [];
  let finish: () => void = () => {};
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const controller = await new Watch(config).watch(
    path,
    query,
    (type, object) => {
      events.push({ type, object: object as WatchedEvent['object'] });
      if (until(events)) finish();
    },
    () => finish(),
  );
  const timer = setTimeout(finish, timeoutMs);
  await finished;
  clearTimeout(timer);
  controller.abort();
  return events;
}

/** The refusal events of a pod, once the node agent has recorded at least one. */
async function awaitRefusal(podName: string) {
  return waitUntil(
    async () => {
      const list = await real.adminCore.listNamespacedEvent({
        namespace,
        fieldSelector: `involvedObject.name=${podName},reason=FailedCreatePodSandBox`,
      });
      return list.items.length > 0 ? list.items : undefined;
    },
    { what: `a refusal event of ${podName}` },
  );
}

describe('the events watch of the readiness wait', () => {
  it('selects by involvedObject.uid and reason and replays earlier events from resourceVersion=0', async () => {
    const core = serviceCore();
    const refused = await core.createNamespacedPod({ namespace, body: podBody(300) });
    const other = await core.createNamespacedPod({ namespace, body: podBody(300) });
    await awaitRefusal(refused.metadata!.name!);
    await awaitRefusal(other.metadata!.name!);
    // Another reason on the same pod must not be selected.
    await real.adminCore.createNamespacedEvent({
      namespace,
      body: {
        metadata: { name: `${refused.metadata!.name}.scheduled`, namespace },
        involvedObject: {
          kind: 'Pod',
          namespace,
          name: refused.metadata!.name,
          uid: refused.metadata!.uid,
        },
        reason: 'Scheduled',
        message: 'Successfully assigned',
        type: 'Normal',
        source: { component: 'default-scheduler' },
      },
    });

    const events = await collectWatch(
      real.tier.kubeConfig('durable-sandbox', namespace),
      `/api/v1/namespaces/${namespace}/events`,
      {
        resourceVersion: '0',
        fieldSelector: `involvedObject.uid=${refused.metadata!.uid},reason=FailedCreatePodSandBox`,
      },
      () => false,
      3_000,
    );
    expect(events.length).toBeGreaterThan(0);
    expect(events[0]?.type).toBe('ADDED');
    for (const { object } of events) {
      expect(object).toMatchObject({
        reason: 'FailedCreatePodSandBox',
        involvedObject: { uid: refused.metadata!.uid },
        message: expect.stringContaining('is smaller than cloned rootfs size 451 MiB'),
      });
    }
  });

  it('sends a bookmark to a watch that asks for them, as the simulated apiserver does', async () => {
    await serviceCore().createNamespacedPod({ namespace, body: podBody(2048) });
    const simulatedConfig = new KubeConfig();
    simulatedConfig.loadFromString(simulated.kubeconfigYaml());
    const targets = [
      { name: 'real', config: real.tier.kubeConfig('durable-sandbox', namespace), ns: namespace },
      { name: 'simulated', config: simulatedConfig, ns: 'sandboxes' },
    ];
    for (const { name, config, ns } of targets) {
      const events = await collectWatch(
        config,
        `/api/v1/namespaces/${ns}/pods`,
        { resourceVersion: '0', allowWatchBookmarks: true },
        (seen) => seen.some((event) => event.type === 'BOOKMARK'),
      );
      const bookmark = events.find((event) => event.type === 'BOOKMARK');
      expect(
        bookmark,
        `${name}: ${JSON.stringify(events.map((event) => event.type))}`,
      ).toBeDefined();
      expect(bookmark?.object).toMatchObject({ kind: 'Pod', apiVersion: 'v1' });
      expect(bookmark?.object.metadata?.resourceVersion).toMatch(/^\d+$/);
    }
  });
});

describe('the uid precondition of pod deletes', () => {
  it('is a real 409 on a uid mismatch, so deletePod leaves the newer pod alone', async () => {
    const client = createKubernetesClient({
      kubeconfigYaml: real.tier.kubeconfigYaml('durable-sandbox', namespace),
      namespace,
    });
    const pod = await client.core.createNamespacedPod({ namespace, body: podBody(2048) });
    const name = pod.metadata!.name!;
    expect(await deletePod(client, { name, uid: randomUUID() })).toBe('replaced');
    const still = await client.core.readNamespacedPod({ name, namespace });
    expect(still.metadata?.uid).toBe(pod.metadata?.uid);
    expect(still.metadata?.deletionTimestamp).toBeUndefined();

    expect(await deletePod(client, { name, uid: pod.metadata!.uid! })).toBe('deleted');
    // The pod is bound to the agent's node: the agent finishes the graceful deletion.
    await waitUntil(
      async () =>
        httpStatusOf(await client.core.readNamespacedPod({ name, namespace }).catch((e) => e)) ===
        404,
      { what: `pod ${name} to be gone` },
    );
  });
});

describe('connections to the real apiserver (TLS)', () => {
  it('pod deletes keep the pool connection: no TLS handshake per delete', async () => {
    const client = createKubernetesClient({
      kubeconfigYaml: real.tier.kubeconfigYaml('durable-sandbox', namespace),
      namespace,
    });
    // The sockets this client wrote to (the node agent in this process talks to the apiserver
    // too, on connections of its own, so a process-wide count of connections would not do).
    const used = { before: new Set<unknown>(), byDeletes: new Set<unknown>() };
    const collection = `/api/v1/namespaces/${namespace}/pods`;
    const ours = new Set<string>();
    const onSend = (message: unknown) => {
      const { request, socket } = message as {
        request: { method: string; path: string };
        socket: unknown;
      };
      // This client's list and creates (no query: the agent's watches carry one) and deletes.
      if (request.path === collection && (request.method === 'GET' || request.method === 'POST'))
        used.before.add(socket);
      if (request.method === 'DELETE' && ours.has(request.path)) used.byDeletes.add(socket);
    };
    diagnostics.subscribe('undici:client:sendHeaders', onSend);
    try {
      await client.core.listNamespacedPod({ namespace });
      const pods = [];
      for (let n = 0; n < 5; n++) {
        const pod = await client.core.createNamespacedPod({ namespace, body: podBody(2048) });
        pods.push({ name: pod.metadata!.name!, uid: pod.metadata!.uid! });
        ours.add(`${collection}/${pod.metadata!.name!}`);
      }
      for (const pod of pods) expect(await deletePod(client, pod)).toBe('deleted');
    } finally {
      diagnostics.unsubscribe('undici:client:sendHeaders', onSend);
    }
    // Every delete went over a connection the list and the creates had opened. Before: a new
    // TLS connection per delete, as undici closed each after its body.
    expect(used.byDeletes.size).toBeGreaterThan(0);
    const opened = [...used.byDeletes].filter((socket) => !used.before.has(socket));
    expect(opened.length, 'connections the deletes opened').toBe(0);
  });
});

/** The Status body of a refused request: `fn` must throw an ApiException. */
async function statusBody(fn: () => Promise<unknown>): Promise<Record<string, unknown>> {
  try {
    await fn();
  } catch (err) {
    const body = (err as { body?: unknown }).body;
    return typeof body === 'string' ? JSON.parse(body) : (body as Record<string, unknown>);
  }
  throw new Error('the request succeeded');
}

describe('Status bodies: the simulated apiserver answers as the real one', () => {
  const cases: Array<{
    name: string;
    request: (core: CoreV1Api, ns: string, pod: string) => Promise<unknown>;
  }> = [
    {
      name: 'get of a missing pod (404 NotFound)',
      request: (core, ns) => core.readNamespacedPod({ name: 'missing-pod', namespace: ns }),
    },
    {
      name: 'create of an existing pod (409 AlreadyExists)',
      request: (core, ns, pod) =>
        core.createNamespacedPod({
          namespace: ns,
          body: { ...podBody(2048), metadata: { ...podBody(2048).metadata, name: pod } },
        }),
    },
    {
      name: 'delete with another uid (409 Conflict)',
      request: (core, ns, pod) =>
        core.deleteNamespacedPod({
          name: pod,
          namespace: ns,
          body: { preconditions: { uid: '00000000-0000-0000-0000-000000000000' } },
        }),
    },
    {
      name: 'delete of a missing pod (404 NotFound)',
      request: (core, ns) => core.deleteNamespacedPod({ name: 'missing-pod', namespace: ns }),
    },
  ];

  for (const { name, request } of cases) {
    it(name, async () => {
      const simulatedCore = createKubernetesClient({
        kubeconfigYaml: simulated.kubeconfigYaml(),
        namespace: 'sandboxes',
      }).core;
      const realPod = await serviceCore().createNamespacedPod({ namespace, body: podBody(2048) });
      const simulatedPod = await simulatedCore.createNamespacedPod({
        namespace: 'sandboxes',
        body: podBody(2048),
      });
      const normalize = (body: Record<string, unknown>, pod: string, uid: string, ns: string) =>
        JSON.parse(
          JSON.stringify(body)
            .replaceAll(pod, '<pod>')
            .replaceAll(uid, '<uid>')
            .replaceAll(`"${ns}"`, '"<namespace>"'),
        ) as Record<string, unknown>;
      const fromReal = normalize(
        await statusBody(() => request(serviceCore(), namespace, realPod.metadata!.name!)),
        realPod.metadata!.name!,
        realPod.metadata!.uid!,
        namespace,
      );
      const fromSimulated = normalize(
        await statusBody(() => request(simulatedCore, 'sandboxes', simulatedPod.metadata!.name!)),
        simulatedPod.metadata!.name!,
        simulatedPod.metadata!.uid!,
        'sandboxes',
      );
      expect(fromSimulated).toEqual(fromReal);
    });
  }
});

describe('admission on the real apiserver', () => {
  // What the service's create meets; how the operation reports it is the API's business.
  it('a LimitRange refuses a pod over its maximum: 403 Forbidden with the apiserver message', async () => {
    const ns = await real.freshNamespace('limits');
    await real.adminCore.createNamespacedLimitRange({
      namespace: ns,
      body: {
        metadata: { name: 'max-memory' },
        spec: { limits: [{ type: 'Container', max: { memory: '128Mi' } }] },
      },
    });
    const body = podBody(2048);
    const refused = await statusBody(() =>
      serviceCore(ns).createNamespacedPod({ namespace: ns, body }),
    );
    expect(refused).toMatchObject({
      code: 403,
      reason: 'Forbidden',
      message: `pods "${body.metadata!.name}" is forbidden: maximum memory usage per Container is 128Mi, but limit is 256Mi`,
      details: { name: body.metadata!.name, kind: 'pods' },
    });
  });

  it('a ResourceQuota refuses a pod over its limit: 403 Forbidden with the apiserver message', async () => {
    const ns = await real.freshNamespace('quota');
    const hard = { pods: '1' };
    const quota = await real.adminCore.createNamespacedResourceQuota({
      namespace: ns,
      body: { metadata: { name: 'one-pod' }, spec: { hard } },
    });
    // With no controller-manager nobody computes the quota's usage, and admission skips a
    // quota whose status is empty: set it as the resource quota controller would.
    await real.adminCore.replaceNamespacedResourceQuotaStatus({
      name: 'one-pod',
      namespace: ns,
      body: { ...quota, status: { hard, used: { pods: '0' } } },
    });
    await waitUntil(
      async () => {
        const body = podBody(2048);
        const answer = await serviceCore(ns)
          .createNamespacedPod({ namespace: ns, body })
          .then(() => undefined)
          .catch(
            (err: { body?: string }) => JSON.parse(err.body ?? '{}') as Record<string, unknown>,
          );
        return answer;
      },
      { what: 'a create refused by the quota' },
    ).then((refused) =>
      expect(refused).toMatchObject({
        code: 403,
        reason: 'Forbidden',
        message: expect.stringMatching(
          /^pods "[^"]+" is forbidden: exceeded quota: one-pod, requested: pods=1, used: pods=1, limited: pods=1$/,
        ),
      }),
    );
  });
});

describe('deploy/ manifests', () => {
  it('every file passes a server-side dry run on the real apiserver', async () => {
    const objects = real.admin.makeApiClient(KubernetesObjectApi);
    const files = readdirSync('deploy')
      .filter((file) => /\.ya?ml$/.test(file))
      // namespaces.yaml first, while its namespaces do not exist yet.
      .sort((a, b) => Number(b === 'namespaces.yaml') - Number(a === 'namespaces.yaml'));
    expect(files).toEqual(
      expect.arrayContaining([
        'rbac.yaml',
        'namespaces.yaml',
        'service-account.yaml',
        'sandbox-isolation.yaml',
        'api.yaml',
        'worker.yaml',
      ]),
    );
    const kinds: string[] = [];
    for (const file of files) {
      for (const object of loadAllYaml(
        readFileSync(`deploy/${file}`, 'utf8'),
      ) as KubernetesObject[]) {
        const answer = await objects.create(object, undefined, 'All').catch((err: unknown) => {
          throw new Error(
            `${file}: ${object.kind} ${object.metadata?.name}: ${String((err as { body?: unknown }).body ?? err)}`,
          );
        });
        kinds.push(`${file}: ${answer.kind}/${answer.metadata?.name}`);
      }
      if (file === 'namespaces.yaml') {
        // The other files' namespaced objects need their namespace to exist, even in a dry run.
        for (const ns of ['durable-sandbox', 'sandboxes']) {
          await real.adminCore.createNamespace({ body: { metadata: { name: ns } } });
        }
      }
    }
    expect(kinds).toEqual(
      expect.arrayContaining([
        'api.yaml: Deployment/durable-sandbox-api',
        'api.yaml: Service/durable-sandbox-api',
        'worker.yaml: Deployment/durable-sandbox-worker',
        'service-account.yaml: ServiceAccount/durable-sandbox-api',
        'service-account.yaml: ServiceAccount/durable-sandbox-worker',
        'rbac.yaml: RoleBinding/durable-sandbox-worker',
        'sandbox-isolation.yaml: NetworkPolicy/sandbox-default-deny',
      ]),
    );
  });
});

describe('the node agent', () => {
  it('keeps its Node Ready and its Lease held, and met no refusal as kubelet or scheduler', async () => {
    const node = await real.adminCore.readNode({ name: real.tier.nodeName });
    expect(node.status?.conditions?.find((c) => c.type === 'Ready')?.status).toBe('True');
    const lease = await real.admin
      .makeApiClient(CoordinationV1Api)
      .readNamespacedLease({ name: real.tier.nodeName, namespace: 'kube-node-lease' });
    expect(lease.spec?.holderIdentity).toBe(real.tier.nodeName);
    // Every write it made (bindings, pod status, events, deletes, lease) was allowed by the
    // Node authorizer, NodeRestriction and the scheduler's ClusterRole.
    expect(real.agentErrors.map(({ what, err }) => `${what}: ${String(err)}`)).toEqual([]);
  });
});
