/**
 * The apiserver's own refusals on the real tier (a real kube-apiserver + etcd, the node agent
 * as kubelet, the service as the `durable-sandbox` user with deploy/rbac.yaml's Role): a
 * LimitRange ends a create as `invalid_request` quoting the LimitRanger, a ResourceQuota as
 * `quota_exceeded`, and a namespace without the RoleBinding makes the worker's cluster check
 * name the missing permissions (the API needs none and stays ready), while a create already
 * under way ends `unavailable`.
 * And the kubelet's refusal written through events.k8s.io/v1, which the real apiserver serves to
 * the service's core/v1 events informer with no `source` (pkg/apis/events/v1/conversion.go), ends
 * the create `invalid_request`.
 */
import { EventsV1Api, RbacAuthorizationV1Api, V1MicroTime } from '@kubernetes/client-node';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/api/app.js';
import { operationErrorOf } from '../src/api/failures.js';
import { WORKER_PERMISSIONS, checkCluster } from '../src/kubernetes/cluster-check.js';
import { createKubernetesClient } from '../src/kubernetes/client.js';
import { USER_ROLE_BINDING } from '../environments/apiserver-tier/namespace.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  finishedCreate,
  startApiStack,
  type ApiStack,
} from './support/api.js';
import { settle, startCreate } from './support/creates.js';
import { withSandboxWorker } from './support/worker.js';
import { startRealTier, type RealTier } from './support/real-tier.js';
import { uniqueTaskQueue } from './support/temporal.js';
import { waitUntil } from '../tools/wait-until.js';

let real: RealTier;
let api: ApiStack;
let namespace: string;
// A cold build of etcd and kube-apiserver (apiserver-tier/binaries.ts) may run in this hook.
beforeAll(async () => {
  real = await startRealTier();
  namespace = await real.freshNamespace('refusals');
  api = await startApiStack({ stack: { apiserver: real.serviceTarget(namespace) } });
}, 20 * 60_000);
afterAll(async () => {
  await api?.stop();
  await real?.stop();
});

/** The API over the stack, with the service's client for another namespace. */
function appIn(ns: string) {
  const kubernetes = createKubernetesClient({
    kubeconfigYaml: real.serviceTarget(ns).kubeconfigYaml,
    namespace: ns,
  });
  return createApp({ ...api.deps, kubernetes });
}

describe('apiserver refusals on a real kube-apiserver', () => {
  it('a LimitRange ends the create at once as invalid_request quoting the LimitRanger', async () => {
    await real.adminCore.createNamespacedLimitRange({
      namespace,
      body: {
        metadata: { name: 'max-disk' },
        spec: { limits: [{ type: 'Container', max: { 'ephemeral-storage': '2Gi' } }] },
      },
    });
    try {
      const started = Date.now();
      const op = await finishedCreate(api.app, api.tenantA, createBody(3000));
      expect(op.error?.code).toBe('invalid_request');
      expect(op.error?.message).toMatch(
        /^the apiserver refused the pod: pods "sbx-[^"]+" is forbidden: maximum ephemeral-storage usage per Container is 2Gi, but limit is 3000Mi$/,
      );
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      await real.adminCore.deleteNamespacedLimitRange({ name: 'max-disk', namespace });
    }
  });

  it('a ResourceQuota ends the create as quota_exceeded, and the API stays ready', async () => {
    const ns = await real.freshNamespace('quota');
    const hard = { pods: '0' };
    const quota = await real.adminCore.createNamespacedResourceQuota({
      namespace: ns,
      body: { metadata: { name: 'sandbox-quota' }, spec: { hard } },
    });
    // No controller-manager computes usage; admission skips a quota whose status is empty.
    await real.adminCore.replaceNamespacedResourceQuotaStatus({
      name: 'sandbox-quota',
      namespace: ns,
      body: { ...quota, status: { hard, used: { pods: '0' } } },
    });
    // The stack's worker creates in the stack's namespace: this one gets a worker of its own.
    const op = await waitUntil(
      async () => {
        const done = await createAndWaitIn(ns);
        return done.error?.code === 'quota_exceeded' ? done : undefined;
      },
      { timeoutMs: 60_000, what: 'a create refused by the quota' },
    );
    expect(op.error?.message).toMatch(
      /^the apiserver refused the pod: a resource quota is exhausted: pods "[^"]+" is forbidden: exceeded quota: sandbox-quota, requested: pods=1$/,
    );
    // The namespace's usage and quota are every tenant's figures: not shown to one.
    expect(JSON.stringify(op.error)).not.toMatch(/used:|limited:/);
    // A quota is capacity, not a broken installation: the API stays ready.
    expect((await request(appIn(ns)).get('/readyz')).status).toBe(200);
  });

  it("a namespace without the RoleBinding: the worker's check names every grant, the API stays ready, a running create ends unavailable", async () => {
    const ns = await real.freshNamespace('norbac');
    const rbac = real.admin.makeApiClient(RbacAuthorizationV1Api);
    await rbac.deleteNamespacedRoleBinding({ name: USER_ROLE_BINDING, namespace: ns });
    const worker = createKubernetesClient({
      kubeconfigYaml: real.serviceTarget(ns).kubeconfigYaml,
      namespace: ns,
    });
    expect(await checkCluster(worker, WORKER_PERMISSIONS)).toEqual({
      ok: false,
      problem: `the service account may not create pods, get pods, list pods, watch pods, update pods, delete pods, get events, list events, watch events in namespace "${ns}" (apply deploy/rbac.yaml)`,
    });
    // The API needs no grant (src/kubernetes/cluster-check.ts, API_PERMISSIONS): still ready.
    const ready = await request(appIn(ns)).get('/readyz').set(bearer(api.tenantA));
    expect(ready.status, ready.text).toBe(200);
    expect(ready.body.checks.cluster).toBe('ok');

    // The 403 is retried for its bound (3 s here, 60 s in the service), then the create ends.
    const result = await createIn(ns, 2048, 3_000);
    expect(operationErrorOf(result.error)).toMatchObject({
      code: 'unavailable',
      message: expect.stringMatching(
        /^the service account may not create pods \(deploy\/rbac\.yaml is not applied\?\), refused for over 3 s: pods is forbidden: User "durable-sandbox" cannot create resource "pods" in API group "" in the namespace "norbac-\w+"$/,
      ),
    });
    // Every attempt was refused, so no pod can exist: the compensation scheduled no delete
    // (which this namespace would refuse too) and the create ended.
    const scheduled = result.history
      .map((e) => e.activityTaskScheduledEventAttributes?.activityType?.name)
      .filter(Boolean);
    expect(scheduled).toEqual(['createPod']);
    const createPodAttempts = result.history.find((e) => e.activityTaskStartedEventAttributes)
      ?.activityTaskStartedEventAttributes?.attempt;
    expect(createPodAttempts).toBeGreaterThan(1);
  });

  it('the refusal written through events.k8s.io/v1 by a kubelet-like reporter ends the create invalid_request', async () => {
    real.agent.neverReady(true);
    try {
      const accepted = await acceptedCreate(api.app, api.tenantA, createBody(300));
      const sandboxId = accepted.sandbox_id;
      const pod = await waitUntil(
        async () => {
          const pods = await real.adminCore.listNamespacedPod({ namespace });
          return pods.items.find(
            (p) =>
              p.metadata?.labels?.['durable-sandbox.dev/sandbox-id'] === sandboxId &&
              p.spec?.nodeName,
          );
        },
        { what: `the pod of ${sandboxId} bound to a node` },
      );
      const nodeName = pod.spec?.nodeName as string;
      // Written as client-go tools/events writes it (no deprecated fields: the apiserver
      // refuses them on an events.k8s.io/v1 create).
      const events = real.admin.makeApiClient(EventsV1Api);
      const name = `${pod.metadata?.name}.${Date.now().toString(16)}`;
      await events.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name },
          eventTime: new V1MicroTime(),
          reportingController: 'kubernetes.io/kubelet',
          reportingInstance: nodeName,
          action: 'CreatePodSandbox',
          reason: 'FailedCreatePodSandBox',
          regarding: {
            kind: 'Pod',
            namespace,
            name: pod.metadata?.name,
            uid: pod.metadata?.uid,
            apiVersion: 'v1',
          },
          note:
            'Failed to create pod sandbox: rpc error: code = Unknown desc = ' +
            '[space-err=InvalidArgument] rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
          type: 'Warning',
        },
      });
      // The core/v1 shape the service's informer reads: no source, the reporting pair as written.
      const served = await real.adminCore.readNamespacedEvent({ name, namespace });
      expect(served.source?.component ?? '').toBe('');
      expect(served.source?.host ?? '').toBe('');
      expect(served).toMatchObject({
        reportingComponent: 'kubernetes.io/kubelet',
        reportingInstance: nodeName,
        involvedObject: { uid: pod.metadata?.uid },
      });
      const op = await awaitOperation(api.app, api.tenantA, accepted.id);
      expect(op.error?.code, JSON.stringify(op.error)).toBe('invalid_request');
      expect(op.error?.details).toMatchObject({ node_name: nodeName, rootfs_mib: 451 });
    } finally {
      real.agent.neverReady(false);
    }
  });
});

/**
 * Runs one create workflow in `ns` through a worker whose client is the service's for `ns`.
 * @param permissionBoundMs how long createPod retries an RBAC 403 (default 0: final at once)
 * @returns the workflow's outcome and its history's events
 */
async function createIn(ns: string, diskMib = 2048, permissionBoundMs = 0) {
  const taskQueue = uniqueTaskQueue('real-refusals');
  const kubernetes = createKubernetesClient({
    kubeconfigYaml: real.serviceTarget(ns).kubeconfigYaml,
    namespace: ns,
  });
  return withSandboxWorker(
    {
      temporal: api.stack.temporal,
      store: api.stack.store,
      kubernetes,
      taskQueue,
      refusalBoundsMs: { permission: permissionBoundMs },
    },
    async () => {
      const { handle } = await startCreate({ ...api.stack, taskQueue }, { diskMib });
      const outcome = await settle(handle.result());
      return { ...outcome, history: (await handle.fetchHistory()).events ?? [] };
    },
  );
}

/** {@link createIn}, read back as the operation's error. */
async function createAndWaitIn(ns: string): Promise<{ error: { code: string; message: string } }> {
  const result = await createIn(ns);
  return { error: operationErrorOf(result.error) };
}
