/**
 * Least privilege and isolation as deploy/ sets them up, applied to a real kube-apiserver + etcd
 * (RBAC and PodSecurity admission on) and checked server-side: deploy/namespaces.yaml,
 * service-account.yaml, rbac.yaml and sandbox-isolation.yaml are created as an operator would
 * apply them, each process acts with a token of its own ServiceAccount (TokenRequest), and:
 *
 * - the API's account may not create a pod anywhere (the apiserver answers RBAC 403), yet its
 *   own readiness check passes: it needs nothing (src/kubernetes/cluster-check.ts, API_PERMISSIONS);
 * - the worker's account creates and deletes pods in the sandbox namespace only;
 * - the sandbox namespace keeps its Pod Security labels and the default-deny NetworkPolicy as
 *   written, and its PodSecurity admission refuses a privileged pod (baseline).
 */
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import {
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  NetworkingV1Api,
  type KubernetesObject,
  type V1Pod,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { renderTierKubeconfig } from '../environments/apiserver-tier/kubeconfig.js';
import {
  API_PERMISSIONS,
  WORKER_PERMISSIONS,
  checkCluster,
} from '../src/kubernetes/cluster-check.js';
import { createKubernetesClient, httpStatusOf } from '../src/kubernetes/client.js';
import { sandboxPod } from '../src/kubernetes/pod-spec.js';
import { startRealTier, type RealTier } from './support/real-tier.js';

/** The namespaces of deploy/namespaces.yaml. */
const SERVICE_NAMESPACE = 'durable-sandbox';
const SANDBOX_NAMESPACE = 'sandboxes';

let real: RealTier;
/** Kubeconfigs (YAML) authenticating with each ServiceAccount's own token, in `sandboxes`. */
let apiKubeconfig: string;
let workerKubeconfig: string;

// A cold build of etcd and kube-apiserver (apiserver-tier/binaries.ts) may run in this hook.
beforeAll(async () => {
  real = await startRealTier();
  const objects = real.admin.makeApiClient(KubernetesObjectApi);
  for (const file of [
    'namespaces.yaml',
    'service-account.yaml',
    'rbac.yaml',
    'sandbox-isolation.yaml',
  ]) {
    for (const object of loadAllYaml(
      readFileSync(`deploy/${file}`, 'utf8'),
    ) as KubernetesObject[]) {
      await objects.create(object);
    }
  }
  apiKubeconfig = await accountKubeconfig('durable-sandbox-api');
  workerKubeconfig = await accountKubeconfig('durable-sandbox-worker');
}, 20 * 60_000);
afterAll(async () => {
  await real?.stop();
});

/** A kubeconfig holding a fresh token of ServiceAccount `durable-sandbox/<name>`. */
async function accountKubeconfig(name: string): Promise<string> {
  const request = await real.adminCore.createNamespacedServiceAccountToken({
    name,
    namespace: SERVICE_NAMESPACE,
    body: { spec: { audiences: [], expirationSeconds: 3600 } },
  });
  return renderTierKubeconfig({
    server: real.tier.url,
    caPem: real.tier.caPem,
    user: name,
    token: request.status?.token ?? '',
    namespace: SANDBOX_NAMESPACE,
  });
}

function coreOf(kubeconfigYaml: string): CoreV1Api {
  const config = new KubeConfig();
  config.loadFromString(kubeconfigYaml);
  return config.makeApiClient(CoreV1Api);
}

/** A sandbox pod as the worker builds it, for a new sandbox id. */
function podBody(): V1Pod {
  const pod = sandboxPod({
    sandboxId: `sbx_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
    generation: 1,
    template: 'base',
    image: 'example/base:1',
    resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
  });
  return pod;
}

/** The apiserver's answer to a pod create: 201, or the refusal's status and Status message. */
async function createPod(
  core: CoreV1Api,
  namespace: string,
  body: V1Pod,
): Promise<{ status: number; message: string; name?: string }> {
  try {
    const created = await core.createNamespacedPod({ namespace, body });
    return { status: 201, message: '', name: created.metadata?.name };
  } catch (err) {
    const status = httpStatusOf(err);
    if (status === undefined) throw err;
    const parsed = JSON.parse((err as { body?: string }).body ?? '{}') as { message?: string };
    return { status, message: parsed.message ?? '' };
  }
}

describe("the API's account (deploy/service-account.yaml, bound to no Role)", () => {
  it('may not create a pod: the real apiserver answers RBAC 403, in the sandbox namespace and its own', async () => {
    const core = coreOf(apiKubeconfig);
    for (const namespace of [SANDBOX_NAMESPACE, SERVICE_NAMESPACE]) {
      const answer = await createPod(core, namespace, podBody());
      expect(answer, namespace).toEqual({
        status: 403,
        message: `pods is forbidden: User "system:serviceaccount:durable-sandbox:durable-sandbox-api" cannot create resource "pods" in API group "" in the namespace "${namespace}"`,
      });
    }
    const pods = await real.adminCore.listNamespacedPod({ namespace: SANDBOX_NAMESPACE });
    expect(pods.items.map((pod) => pod.metadata?.name)).toEqual([]);
  });

  it("passes its own readiness check (it needs nothing), and would fail the worker's", async () => {
    const client = createKubernetesClient({
      kubeconfigYaml: apiKubeconfig,
      namespace: SANDBOX_NAMESPACE,
    });
    expect(await checkCluster(client, API_PERMISSIONS)).toEqual({ ok: true });
    expect(await checkCluster(client, WORKER_PERMISSIONS)).toEqual({
      ok: false,
      problem:
        'the service account may not create pods, get pods, list pods, watch pods, update pods, delete pods, get events, list events, watch events in namespace "sandboxes" (apply deploy/rbac.yaml)',
    });
  });
});

describe("the worker's account (deploy/rbac.yaml's Role)", () => {
  it('creates and deletes a pod in the sandbox namespace, and may not create one elsewhere', async () => {
    const core = coreOf(workerKubeconfig);
    const created = await createPod(core, SANDBOX_NAMESPACE, podBody());
    expect(created.status, created.message).toBe(201);
    await core.deleteNamespacedPod({ name: created.name!, namespace: SANDBOX_NAMESPACE });
    const elsewhere = await createPod(core, SERVICE_NAMESPACE, podBody());
    expect(elsewhere).toEqual({
      status: 403,
      message:
        'pods is forbidden: User "system:serviceaccount:durable-sandbox:durable-sandbox-worker" cannot create resource "pods" in API group "" in the namespace "durable-sandbox"',
    });
    const client = createKubernetesClient({
      kubeconfigYaml: workerKubeconfig,
      namespace: SANDBOX_NAMESPACE,
    });
    expect(await checkCluster(client, WORKER_PERMISSIONS)).toEqual({ ok: true });
  });
});

describe('the sandbox namespace (deploy/namespaces.yaml, deploy/sandbox-isolation.yaml)', () => {
  it('keeps the Pod Security labels: enforce, warn and audit restricted', async () => {
    const namespace = await real.adminCore.readNamespace({ name: SANDBOX_NAMESPACE });
    expect(namespace.metadata?.labels).toMatchObject({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/audit': 'restricted',
    });
  });

  it("refuses a pod that breaks baseline in PodSecurity admission, even from the worker's account", async () => {
    // The host's network namespace and an added capability: both `baseline` violations. (A
    // privileged container is refused before admission here: the tier's kube-apiserver runs
    // without --allow-privileged, so validation answers 422 first.)
    const body = podBody();
    body.spec!.hostNetwork = true;
    body.spec!.containers[0]!.securityContext = { capabilities: { add: ['SYS_ADMIN'] } };
    const answer = await createPod(coreOf(workerKubeconfig), SANDBOX_NAMESPACE, body);
    expect(answer.status, answer.message).toBe(403);
    expect(answer.message).toMatch(
      /^pods "[^"]+" is forbidden: violates PodSecurity "restricted:latest": host namespaces \(hostNetwork=true\), .*must not include "SYS_ADMIN" in securityContext\.capabilities\.add\)$/,
    );
  });

  it("refuses a root pod (a template's run_as_root) in PodSecurity admission, admitting the default", async () => {
    const root = podBody();
    delete root.spec!.securityContext!.runAsNonRoot;
    const refused = await createPod(coreOf(workerKubeconfig), SANDBOX_NAMESPACE, root);
    expect(refused.status, refused.message).toBe(403);
    expect(refused.message).toMatch(
      /^pods "[^"]+" is forbidden: violates PodSecurity "restricted:latest": runAsNonRoot != true \(pod or container "sandbox" must set securityContext\.runAsNonRoot=true\)$/,
    );
    const admitted = await createPod(coreOf(workerKubeconfig), SANDBOX_NAMESPACE, podBody());
    expect(admitted.status, admitted.message).toBe(201);
    await real.adminCore.deleteNamespacedPod({
      name: admitted.name!,
      namespace: SANDBOX_NAMESPACE,
    });
  });

  it('holds the default-deny NetworkPolicy as written: no ingress, egress to DNS only', async () => {
    const policy = await real.admin
      .makeApiClient(NetworkingV1Api)
      .readNamespacedNetworkPolicy({ name: 'sandbox-default-deny', namespace: SANDBOX_NAMESPACE });
    expect(policy.spec?.podSelector).toEqual({});
    expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec?.ingress ?? []).toEqual([]);
    expect(policy.spec?.egress).toEqual([
      {
        to: [
          {
            namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
            podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
          },
        ],
        ports: [
          { protocol: 'UDP', port: 53 },
          { protocol: 'TCP', port: 53 },
        ],
      },
    ]);
  });

  it('gives sandbox pods a default ServiceAccount without an automounted token', async () => {
    const account = await real.adminCore.readNamespacedServiceAccount({
      name: 'default',
      namespace: SANDBOX_NAMESPACE,
    });
    expect(account.automountServiceAccountToken).toBe(false);
  });
});
