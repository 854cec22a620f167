/**
 * The sandbox pod's isolation on the real apiserver tier (docs/security.md, "What the worker
 * trusts"; docs/configuration.md, "Templates"): the restrictive securityContext, and a template's
 * `runtime_class_name`, `node_selector` and `tolerations`, as kube-apiserver stored them (read
 * back from it, not only built), in a namespace that enforces Pod Security `restricted`, as
 * deploy/namespaces.yaml's `sandboxes` does: it admits the default pod (runAsNonRoot) and refuses
 * the pod of a template that opted out with `run_as_root`, a refusal the caller reads at once as
 * the apiserver's permanent one (`invalid_request`, quoting the admission).
 */
import { NodeV1Api } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import request from 'supertest';
import { bearer, createBody, finishedCreate, startApiStack, type ApiStack } from './support/api.js';
import { startRealTier, type RealTier } from './support/real-tier.js';

const RUNTIME_CLASS = 'sandbox-isolation-test';
const TOLERATIONS = [
  { key: 'durable-sandbox.dev/sandboxes', operator: 'Exists', effect: 'NoSchedule' },
  {
    key: 'example.com/maintenance',
    operator: 'Equal',
    value: 'soon',
    effect: 'NoExecute',
    tolerationSeconds: 60,
  },
];

let real: RealTier;
let api: ApiStack;
let namespace: string;
// A cold build of etcd and kube-apiserver (apiserver-tier/binaries.ts) may run in this hook.
beforeAll(async () => {
  real = await startRealTier({ rootfsMib: { base: 451, isolated: 451, rooted: 451 } });
  namespace = await real.freshNamespace('podsec', { podSecurity: 'restricted' });
  // The RuntimeClass admission plugin refuses a pod naming a RuntimeClass that does not exist.
  await real.admin.makeApiClient(NodeV1Api).createRuntimeClass({
    body: { metadata: { name: RUNTIME_CLASS }, handler: 'runsc' },
  });
  const templates = {
    base: { image: 'ghcr.io/durable-sandbox/base:1' },
    rooted: { image: 'ghcr.io/durable-sandbox/base:1', run_as_root: true },
    // No word on root: the default, runAsNonRoot.
    isolated: {
      image: 'ghcr.io/durable-sandbox/base:1',
      runtime_class_name: RUNTIME_CLASS,
      node_selector: { 'kubernetes.io/hostname': real.tier.nodeName },
      tolerations: TOLERATIONS,
    },
  };
  api = await startApiStack({
    stack: { apiserver: real.serviceTarget(namespace), learnRootfsFloors: false },
    env: { SANDBOX_TEMPLATES: JSON.stringify(templates) },
  });
}, 20 * 60_000);
afterAll(async () => {
  await api?.stop();
  await real?.stop();
});

describe('the sandbox pod on a real kube-apiserver', () => {
  it("is admitted under Pod Security restricted with the template's runAsNonRoot, RuntimeClass, node selector and tolerations", async () => {
    const done = await finishedCreate(api.app, api.tenantA, {
      ...createBody(2048),
      template: 'isolated',
    });
    expect(done.status, JSON.stringify(done.error)).toBe('succeeded');
    const name = (done.result?.sandbox.pod as { name: string }).name;
    const pod = await real.adminCore.readNamespacedPod({ name, namespace });
    expect(pod.spec?.securityContext).toEqual({
      seccompProfile: { type: 'RuntimeDefault' },
      runAsNonRoot: true,
    });
    expect(pod.spec?.containers[0]?.securityContext).toEqual({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(pod.spec?.runtimeClassName).toBe(RUNTIME_CLASS);
    expect(pod.spec?.nodeSelector).toEqual({ 'kubernetes.io/hostname': real.tier.nodeName });
    // The apiserver may add its own (DefaultTolerationSeconds); the template's are all there.
    expect(pod.spec?.tolerations).toEqual(expect.arrayContaining(TOLERATIONS));
    expect(pod.spec?.nodeName).toBe(real.tier.nodeName);
  });

  it('is refused by Pod Security restricted for a template with run_as_root, as a permanent invalid_request', async () => {
    const templates = await request(api.app).get('/v1/templates').set(bearer(api.tenantA));
    const rootOf = (name: string) =>
      (templates.body.templates as Array<{ name: string; run_as_root: boolean }>).find(
        (template) => template.name === name,
      )?.run_as_root;
    expect([rootOf('base'), rootOf('isolated'), rootOf('rooted')]).toEqual([false, false, true]);
    const began = Date.now();
    const done = await finishedCreate(api.app, api.tenantA, {
      ...createBody(2048),
      template: 'rooted',
    });
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('invalid_request');
    expect(done.error?.message).toMatch(
      /the apiserver refused the pod: .*violates PodSecurity "restricted:[^"]*": runAsNonRoot != true/,
    );
    // Everything else restricted asks for is already there: runAsNonRoot is the only violation.
    expect(done.error?.message).not.toMatch(/allowPrivilegeEscalation|capabilities|seccompProfile/);
    // Permanent: no retry until the deadline (60 s here), the create ends at the first refusal.
    expect(Date.now() - began).toBeLessThan(30_000);
  });
});
