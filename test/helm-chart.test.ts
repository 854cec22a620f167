/**
 * The Helm chart (deploy/chart, docs/helm.md): `helm lint` passes; deploy/*.yaml is the chart
 * rendered with its default values (one source); tokens given as values land in a Secret, never
 * in plain env. On the real apiserver tier (etcd + kube-apiserver, RBAC and PodSecurity on; not
 * a dry run) `helm install` creates every object, and each role's rights are asked of the
 * apiserver as its own ServiceAccount (a TokenRequest token, then SelfSubjectAccessReview): the
 * API's account may not create pods, the worker's may (in the sandbox namespace only), neither
 * may read Secrets. Last, `helm upgrade` from the chart's previous version
 * (test/fixtures/helm-chart-0.1.0) keeps what holds state: the operator's database Secret, the
 * chart's tokens Secret, the namespaces and a sandbox pod in them; `helm uninstall` keeps the
 * namespaces and the operator's Secret (helm.sh/resource-policy: keep).
 */
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AppsV1Api,
  AuthorizationV1Api,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  loadAllYaml,
  PolicyV1Api,
  type KubernetesObject,
  type V1Deployment,
  type V1Secret,
} from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startApiserverTier, type ApiserverTier } from '../environments/apiserver-tier/launcher.js';
import { renderTierKubeconfig } from '../environments/apiserver-tier/kubeconfig.js';
import { locateHelm } from '../environments/helm/binaries.js';
import { sandboxPod } from '../src/kubernetes/pod-spec.js';
import {
  CHART_DIR,
  DEPLOY_DIR,
  NOT_RENDERED,
  renderDeployManifests,
} from '../tools/deploy-render.js';
import { helmFor, type Helm } from './support/helm.js';

/** deploy/chart/values.yaml's `tenantLimits.default`. */
const DEFAULT_LIMIT_VALUES = {
  sandboxes: 20,
  cpu: 40,
  memory_mib: 81920,
  disk_mib: 409600,
  creates_per_second: 5,
  create_burst: 10,
  waits: 100,
};

const PREVIOUS_CHART = join(import.meta.dirname, 'fixtures', 'helm-chart-0.1.0');

/** Tokens given as values (docs/helm.md, "Tokens"). */
const TOKEN_VALUES = {
  existingSecret: '',
  api: 'acme:s3cret',
  admin: 'ops:0p3r4t0r',
  webhookSecretKeys: 'k1:MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=',
};

/** The objects `helm template` renders for a values file (JSON text). */
async function template(helm: Helm, values: object): Promise<KubernetesObject[]> {
  const file = helm.valuesFile(`values-${randomUUID()}.json`, JSON.stringify(values));
  const answer = await helm.run(['template', 'durable-sandbox', CHART_DIR, '-f', file]);
  expect(answer.code, answer.stderr).toBe(0);
  return loadAllYaml(answer.stdout) as KubernetesObject[];
}

describe('deploy/chart, offline', () => {
  let helm: Helm;
  beforeAll(async () => {
    helm = await helmFor();
  }, 20 * 60_000); // a cold build of helm (environments/helm/binaries.ts) may run here
  afterAll(() => helm?.dispose());

  it('passes helm lint, with the default values and with tokens from values', async () => {
    for (const values of [{}, { tokens: TOKEN_VALUES }]) {
      const file = helm.valuesFile(`lint-${randomUUID()}.json`, JSON.stringify(values));
      const answer = await helm.run(['lint', '--strict', CHART_DIR, '-f', file]);
      expect(answer.code, answer.stdout + answer.stderr).toBe(0);
      expect(answer.stdout).toContain('1 chart(s) linted, 0 chart(s) failed');
    }
  });

  it('renders every plain manifest of deploy/ (temporal-setup.yaml aside) as it is checked in', async () => {
    const rendered = await renderDeployManifests(await locateHelm());
    const checkedIn = readdirSync(DEPLOY_DIR).filter(
      (name) => name.endsWith('.yaml') && !NOT_RENDERED.includes(name),
    );
    expect([...rendered.keys()].sort()).toEqual(checkedIn.sort());
    for (const [file, text] of rendered) {
      expect(
        readFileSync(join(DEPLOY_DIR, file), 'utf8'),
        `deploy/${file} differs from the chart: run npm run deploy:render`,
      ).toBe(text);
    }
  });

  it('writes tokens given as values into its Secret, which both roles reference (never plain env)', async () => {
    const objects = await template(helm, { tokens: TOKEN_VALUES });
    const secret = objects.find((o) => o.kind === 'Secret') as V1Secret;
    expect(secret.metadata).toMatchObject({
      name: 'durable-sandbox-tokens',
      namespace: 'durable-sandbox',
    });
    expect(secret.stringData).toEqual({
      'api-tokens': TOKEN_VALUES.api,
      'admin-tokens': TOKEN_VALUES.admin,
      'webhook-secret-keys': TOKEN_VALUES.webhookSecretKeys,
    });
    const env = (name: string) =>
      (objects.find((o) => o.kind === 'Deployment' && o.metadata?.name === name) as V1Deployment)
        .spec!.template.spec!.containers[0]!.env!;
    for (const [deployment, variables] of [
      ['durable-sandbox-api', ['API_TOKENS', 'ADMIN_TOKENS', 'WEBHOOK_SECRET_KEYS']],
      ['durable-sandbox-worker', ['WEBHOOK_SECRET_KEYS']],
    ] as const) {
      for (const name of variables) {
        const variable = env(deployment).find((v) => v.name === name);
        expect(variable?.value, `${deployment} ${name}`).toBeUndefined();
        expect(variable?.valueFrom?.secretKeyRef?.name, `${deployment} ${name}`).toBe(
          'durable-sandbox-tokens',
        );
      }
    }
    const rendered = JSON.stringify(objects.filter((o) => o.kind !== 'Secret'));
    for (const token of [TOKEN_VALUES.api, TOKEN_VALUES.admin, TOKEN_VALUES.webhookSecretKeys]) {
      expect(rendered).not.toContain(token);
    }
  });

  it('refuses to render without tokens when no existing Secret is named', async () => {
    const file = helm.valuesFile(
      'no-tokens.json',
      JSON.stringify({ tokens: { existingSecret: '' } }),
    );
    const answer = await helm.run(['template', 'durable-sandbox', CHART_DIR, '-f', file]);
    expect(answer.code).not.toBe(0);
    expect(answer.stderr).toContain('tokens.api (tenant:token pairs) is required');
  });

  it('gives the api and the worker the same TENANT_LIMITS and SANDBOX_TEMPLATES, from values', async () => {
    const tenantLimits = { default: { sandboxes: 3 }, tenants: { acme: { sandboxes: 9 } } };
    // A quote in a value must survive YAML's single-quoted scalar.
    const sandboxTemplates = { base: { image: 'ghcr.io/durable-sandbox/base:1', note: "it's" } };
    const objects = await template(helm, { tenantLimits, sandboxTemplates });
    const deployments = objects.filter((o) => o.kind === 'Deployment') as V1Deployment[];
    expect(deployments).toHaveLength(2);
    for (const deployment of deployments) {
      const env = deployment.spec!.template.spec!.containers[0]!.env!;
      const value = (name: string) => JSON.parse(env.find((v) => v.name === name)?.value ?? '');
      // Helm merges a values map over the chart's: unset limits keep the defaults of values.yaml.
      expect(value('TENANT_LIMITS'), deployment.metadata?.name).toEqual({
        default: { ...DEFAULT_LIMIT_VALUES, sandboxes: 3 },
        tenants: tenantLimits.tenants,
      });
      expect(value('SANDBOX_TEMPLATES'), deployment.metadata?.name).toEqual(sandboxTemplates);
    }
  });
});

describe('deploy/chart on the real apiserver tier', () => {
  let tier: ApiserverTier;
  let helm: Helm;
  let admin: KubeConfig;

  /** A KubeConfig authenticating with a fresh token of ServiceAccount `<namespace>/<name>`. */
  async function accountConfig(namespace: string, name: string): Promise<KubeConfig> {
    const request = await admin.makeApiClient(CoreV1Api).createNamespacedServiceAccountToken({
      name,
      namespace,
      body: { spec: { audiences: [], expirationSeconds: 3600 } },
    });
    const config = new KubeConfig();
    config.loadFromString(
      renderTierKubeconfig({
        server: tier.url,
        caPem: tier.caPem,
        user: name,
        token: request.status?.token ?? '',
        namespace,
      }),
    );
    return config;
  }

  /** The apiserver's answer to "may I <verb> <resource> in <namespace>?", asked as `config`. */
  async function mayI(
    config: KubeConfig,
    verb: string,
    resource: string,
    namespace: string,
  ): Promise<boolean> {
    const review = await config.makeApiClient(AuthorizationV1Api).createSelfSubjectAccessReview({
      body: { spec: { resourceAttributes: { namespace, verb, resource } } },
    });
    return review.status?.allowed ?? false;
  }

  beforeAll(async () => {
    tier = await startApiserverTier({ namespace: null });
    admin = tier.kubeConfig('admin');
    helm = await helmFor(tier.kubeconfigYaml('admin'));
    const installed = await helm.run([
      'install',
      'durable-sandbox',
      CHART_DIR,
      '--namespace',
      'default',
    ]);
    expect(installed.code, installed.stderr).toBe(0);
  }, 20 * 60_000); // a cold build of etcd, kube-apiserver and helm may run here
  afterAll(async () => {
    helm?.dispose();
    await tier?.stop();
  });

  it('creates every object the chart renders (helm install, not a dry run), owned by the release', async () => {
    const manifest = await helm.run([
      'get',
      'manifest',
      'durable-sandbox',
      '--namespace',
      'default',
    ]);
    expect(manifest.code, manifest.stderr).toBe(0);
    const objects = loadAllYaml(manifest.stdout) as KubernetesObject[];
    const rendered = [...(await renderDeployManifests(await locateHelm())).values()].flatMap(
      (text) => loadAllYaml(text) as KubernetesObject[],
    );
    const key = (o: KubernetesObject) =>
      `${o.kind} ${o.metadata?.namespace ?? ''}/${o.metadata?.name}`;
    expect(objects.map(key).sort()).toEqual(rendered.map(key).sort());
    const api = admin.makeApiClient(KubernetesObjectApi);
    for (const object of objects) {
      const stored = await api.read({
        apiVersion: object.apiVersion,
        kind: object.kind,
        metadata: { name: object.metadata!.name!, namespace: object.metadata?.namespace },
      });
      expect(stored.metadata?.uid, key(object)).toBeTruthy();
      expect(stored.metadata?.annotations?.['meta.helm.sh/release-name'], key(object)).toBe(
        'durable-sandbox',
      );
    }
  });

  it("the API's account may not create pods anywhere; the worker's may, in the sandbox namespace only", async () => {
    const api = await accountConfig('durable-sandbox', 'durable-sandbox-api');
    const worker = await accountConfig('durable-sandbox', 'durable-sandbox-worker');
    expect(await mayI(api, 'create', 'pods', 'sandboxes')).toBe(false);
    expect(await mayI(api, 'create', 'pods', 'durable-sandbox')).toBe(false);
    expect(await mayI(worker, 'create', 'pods', 'sandboxes')).toBe(true);
    expect(await mayI(worker, 'delete', 'pods', 'sandboxes')).toBe(true);
    expect(await mayI(worker, 'watch', 'events', 'sandboxes')).toBe(true);
    expect(await mayI(worker, 'create', 'pods', 'durable-sandbox')).toBe(false);
  });

  it('neither account may read a Secret, in its own namespace or the sandbox namespace', async () => {
    for (const account of ['durable-sandbox-api', 'durable-sandbox-worker']) {
      const config = await accountConfig('durable-sandbox', account);
      for (const namespace of ['durable-sandbox', 'sandboxes']) {
        for (const verb of ['get', 'list', 'watch']) {
          expect(
            await mayI(config, verb, 'secrets', namespace),
            `${account} ${verb} ${namespace}`,
          ).toBe(false);
        }
      }
    }
  });

  it('helm upgrade from chart 0.1.0 keeps the operator database Secret, the tokens, the namespaces and the sandboxes', async () => {
    const values = helm.valuesFile(
      'upgrade.json',
      JSON.stringify({
        namespaces: { service: 'upgrade-service', sandboxes: 'upgrade-sandboxes' },
        database: { secretName: 'operator-postgresql', secretKey: 'database-url' },
        tokens: TOKEN_VALUES,
      }),
    );
    const release = ['upgrade', PREVIOUS_CHART, '--namespace', 'default', '-f', values];
    const first = await helm.run(['install', ...release]);
    expect(first.code, first.stderr).toBe(0);

    // What the operator and the service put there: the database Secret (never the chart's) and
    // a sandbox pod.
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: 'upgrade-service',
      body: {
        metadata: { name: 'operator-postgresql' },
        stringData: { 'database-url': 'postgres://durable:pw@db.example:5432/durable_sandbox' },
      },
    });
    const pod = sandboxPod({
      sandboxId: `sbx_${randomUUID().replace(/-/g, '').slice(0, 20)}`,
      generation: 1,
      template: 'base',
      image: 'example/base:1',
      resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
    });
    await core.createNamespacedPod({ namespace: 'upgrade-sandboxes', body: pod });
    const snapshot = async () => ({
      database: await core.readNamespacedSecret({
        name: 'operator-postgresql',
        namespace: 'upgrade-service',
      }),
      tokens: await core.readNamespacedSecret({
        name: 'durable-sandbox-tokens',
        namespace: 'upgrade-service',
      }),
      pod: await core.readNamespacedPod({
        name: pod.metadata!.name!,
        namespace: 'upgrade-sandboxes',
      }),
      service: await core.readNamespace({ name: 'upgrade-service' }),
      sandboxes: await core.readNamespace({ name: 'upgrade-sandboxes' }),
    });
    const before = await snapshot();

    const upgraded = await helm.run([
      'upgrade',
      'upgrade',
      CHART_DIR,
      '--namespace',
      'default',
      '-f',
      values,
    ]);
    expect(upgraded.code, upgraded.stderr).toBe(0);
    const status = await helm.run([
      'list',
      '--namespace',
      'default',
      '--filter',
      '^upgrade$',
      '-o',
      'json',
    ]);
    expect(JSON.parse(status.stdout)).toMatchObject([
      { name: 'upgrade', revision: '2', status: 'deployed', chart: 'durable-sandbox-0.2.0' },
    ]);
    // The new version's objects are there...
    const budget = await admin.makeApiClient(PolicyV1Api).readNamespacedPodDisruptionBudget({
      name: 'durable-sandbox-worker',
      namespace: 'upgrade-service',
    });
    expect(budget.spec?.maxUnavailable).toBe(1);
    // ...and everything that holds state is the same object, with the same data, not deleting.
    const after = await snapshot();
    for (const name of ['database', 'tokens', 'pod', 'service', 'sandboxes'] as const) {
      expect(after[name].metadata?.uid, name).toBe(before[name].metadata?.uid);
      expect(after[name].metadata?.deletionTimestamp, name).toBeUndefined();
    }
    expect(after.database.data).toEqual(before.database.data);
    expect(after.tokens.data).toEqual(before.tokens.data);
    expect(Buffer.from(after.tokens.data?.['api-tokens'] ?? '', 'base64').toString()).toBe(
      TOKEN_VALUES.api,
    );
  });
  it('helm uninstall keeps the namespaces and the operator database Secret in them (resource-policy keep)', async () => {
    const values = helm.valuesFile(
      'kept.json',
      JSON.stringify({ namespaces: { service: 'kept-service', sandboxes: 'kept-sandboxes' } }),
    );
    const installed = await helm.run(['install', 'kept', CHART_DIR, '-n', 'default', '-f', values]);
    expect(installed.code, installed.stderr).toBe(0);
    const core = admin.makeApiClient(CoreV1Api);
    await core.createNamespacedSecret({
      namespace: 'kept-service',
      body: {
        metadata: { name: 'durable-sandbox' },
        stringData: { 'database-url': 'postgres://x' },
      },
    });
    const removed = await helm.run(['uninstall', 'kept', '-n', 'default']);
    expect(removed.code, removed.stderr).toBe(0);
    for (const name of ['kept-service', 'kept-sandboxes']) {
      const namespace = await core.readNamespace({ name });
      expect(namespace.metadata?.deletionTimestamp, name).toBeUndefined();
    }
    const secret = await core.readNamespacedSecret({
      name: 'durable-sandbox',
      namespace: 'kept-service',
    });
    expect(Buffer.from(secret.data?.['database-url'] ?? '', 'base64').toString()).toBe(
      'postgres://x',
    );
    // What holds no state went with the release.
    const deployments = await admin
      .makeApiClient(AppsV1Api)
      .listNamespacedDeployment({ namespace: 'kept-service' });
    expect(deployments.items).toEqual([]);
  });
});
