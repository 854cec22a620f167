/**
 * The in-cluster manifests of deploy/ (rendered from the chart deploy/chart with its default
 * values: test/helm-chart.test.ts fails when they differ) checked for what a dry run cannot see: every variable
 * given to the api and the workers is one src/config/index.ts reads, the image and commands match
 * docker-compose.yml, each runs as its own ServiceAccount (only the worker's is bound to
 * deploy/rbac.yaml's Role), the probes point at the health endpoints, the sandbox namespace's
 * Pod Security labels and default-deny NetworkPolicy. (test/real-apiserver.test.ts dry-runs
 * every file on a real kube-apiserver; test/real-least-privilege.test.ts applies them.)
 */
import { readFileSync } from 'node:fs';
import { join, normalize } from 'node:path';
import type {
  V1Deployment,
  V1Namespace,
  V1NetworkPolicy,
  V1RoleBinding,
  V1Service,
} from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../src/config/index.js';
import { DEFAULT_TENANT_LIMITS } from '../src/config/tenant-limits.js';

const ROOT = normalize(join(import.meta.dirname, '..'));
const documents = (file: string) =>
  parseAllDocuments(readFileSync(join(ROOT, 'deploy', file), 'utf8')).map(
    (doc) => doc.toJS() as { kind: string },
  );
const deployment = (file: string) =>
  documents(file).find((doc) => doc.kind === 'Deployment') as V1Deployment;
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, { image: string; command: string[] }>;
};

describe.each([
  { file: 'api.yaml', service: 'api', account: 'durable-sandbox-api' },
  { file: 'worker.yaml', service: 'worker', account: 'durable-sandbox-worker' },
])('deploy/$file', ({ file, service, account }) => {
  const pod = deployment(file).spec!.template.spec!;
  const container = pod.containers[0]!;

  it('runs the image and command of the compose service, as its own ServiceAccount', () => {
    expect(container.image).toBe(compose.services[service]?.image);
    expect(container.args).toEqual(compose.services[service]?.command);
    expect(pod.serviceAccountName).toBe(account);
    expect(
      documents('service-account.yaml').some(
        (doc) =>
          doc.kind === 'ServiceAccount' &&
          (doc as { metadata?: { name?: string } }).metadata?.name === account,
      ),
    ).toBe(true);
    expect(deployment(file).metadata?.namespace).toBe('durable-sandbox');
  });

  it('sets only variables src/config/index.ts reads, and no KUBECONFIG (in-cluster credentials)', () => {
    const names = (container.env ?? []).map((variable) => variable.name);
    expect(names.filter((name) => !(CONFIG_VARIABLES as readonly string[]).includes(name))).toEqual(
      [],
    );
    expect(names).not.toContain('KUBECONFIG');
    expect(names).toEqual(expect.arrayContaining(['TEMPORAL_ADDRESS', 'SANDBOX_NAMESPACE']));
  });

  it('connects to Temporal with mTLS: CA and client certificate from a mounted Secret, read-only', () => {
    const env = new Map((container.env ?? []).map((variable) => [variable.name, variable.value]));
    const mount = container.volumeMounts?.find((m) => m.name === 'temporal-tls');
    expect(mount?.readOnly).toBe(true);
    const dir = mount?.mountPath as string;
    expect(env.get('TEMPORAL_TLS_SERVER_CA_CERT_PATH')).toBe(`${dir}/ca.crt`);
    expect(env.get('TEMPORAL_TLS_CLIENT_CERT_PATH')).toBe(`${dir}/tls.crt`);
    expect(env.get('TEMPORAL_TLS_CLIENT_KEY_PATH')).toBe(`${dir}/tls.key`);
    const volume = pod.volumes?.find((v) => v.name === 'temporal-tls');
    // One certificate per role, so the server's authorizer tells them apart.
    expect(volume?.secret?.secretName).toBe(`${account}-temporal-tls`);
  });

  it('sets LOG_FORMAT=json: JSON lines for the log collector, a failed start included', () => {
    expect(container.env?.find((variable) => variable.name === 'LOG_FORMAT')?.value).toBe('json');
  });

  it('has liveness and readiness probes', () => {
    expect(container.livenessProbe).toBeDefined();
    expect(container.readinessProbe).toBeDefined();
  });

  it("sets TENANT_LIMITS to the built-in defaults, a shared installation's, spelled out", () => {
    const raw = container.env?.find((variable) => variable.name === 'TENANT_LIMITS')?.value;
    expect(loadConfig({ TENANT_LIMITS: raw }).tenantLimits).toEqual({
      default: DEFAULT_TENANT_LIMITS,
      tenants: {},
    });
    expect(JSON.parse(raw ?? '')).toEqual({
      default: {
        sandboxes: 20,
        cpu: 40,
        memory_mib: 81920,
        disk_mib: 409600,
        creates_per_second: 5,
        create_burst: 10,
        waits: 100,
      },
    });
  });
});

describe('operator routes', () => {
  it('the api sets ADMIN_TOKENS from its Secret (the operators can clear a floor), the worker does not', () => {
    const api = deployment('api.yaml').spec!.template.spec!.containers[0]!;
    const admin = api.env?.find((variable) => variable.name === 'ADMIN_TOKENS');
    expect(admin?.valueFrom?.secretKeyRef).toEqual({
      name: 'durable-sandbox',
      key: 'admin-tokens',
    });
    const worker = deployment('worker.yaml').spec!.template.spec!.containers[0]!;
    expect(worker.env?.map((variable) => variable.name)).not.toContain('ADMIN_TOKENS');
  });
});

describe('probes and bindings', () => {
  it('probes the api on /healthz (liveness) and /readyz (readiness), served by its Service', () => {
    const container = deployment('api.yaml').spec!.template.spec!.containers[0]!;
    expect(container.livenessProbe?.httpGet?.path).toBe('/healthz');
    expect(container.readinessProbe?.httpGet?.path).toBe('/readyz');
    const service = documents('api.yaml').find((doc) => doc.kind === 'Service') as V1Service;
    expect(service.spec?.selector).toEqual(deployment('api.yaml').spec?.selector.matchLabels);
  });

  it('probes the worker with src/worker/healthcheck.ts', () => {
    const container = deployment('worker.yaml').spec!.template.spec!.containers[0]!;
    expect(container.livenessProbe?.exec?.command).toEqual([
      'node',
      '--import',
      'tsx',
      'src/worker/healthcheck.ts',
    ]);
  });

  it("binds the worker's ServiceAccount, and only it, to the Role of deploy/rbac.yaml in the sandbox namespace", () => {
    const bindings = ['rbac.yaml', 'service-account.yaml']
      .flatMap(documents)
      .filter((doc) => doc.kind === 'RoleBinding' || doc.kind === 'ClusterRoleBinding');
    expect(bindings).toHaveLength(1);
    const binding = bindings[0] as V1RoleBinding;
    const role = documents('rbac.yaml').find((doc) => doc.kind === 'Role') as unknown as {
      metadata: { name: string; namespace: string };
    };
    expect(binding.metadata?.namespace).toBe(role.metadata.namespace);
    expect(binding.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: role.metadata.name,
    });
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'durable-sandbox-worker', namespace: 'durable-sandbox' },
    ]);
  });
});

describe('the sandbox namespace', () => {
  const sandboxes = documents('namespaces.yaml').find(
    (doc) => (doc as V1Namespace).metadata?.name === 'sandboxes',
  ) as V1Namespace;
  const isolation = documents('sandbox-isolation.yaml');
  const policy = isolation.find((doc) => doc.kind === 'NetworkPolicy') as V1NetworkPolicy;

  it('enforces Pod Security restricted, and warns and audits it', () => {
    expect(sandboxes.metadata?.labels).toEqual({
      'pod-security.kubernetes.io/enforce': 'restricted',
      'pod-security.kubernetes.io/enforce-version': 'latest',
      'pod-security.kubernetes.io/warn': 'restricted',
      'pod-security.kubernetes.io/warn-version': 'latest',
      'pod-security.kubernetes.io/audit': 'restricted',
      'pod-security.kubernetes.io/audit-version': 'latest',
    });
  });

  it('denies every pod of it all ingress and all egress but DNS', () => {
    expect(policy.metadata?.namespace).toBe('sandboxes');
    expect(policy.spec?.podSelector).toEqual({});
    expect(policy.spec?.policyTypes).toEqual(['Ingress', 'Egress']);
    expect(policy.spec?.ingress).toEqual([]);
    expect(policy.spec?.egress).toHaveLength(1);
    const dns = policy.spec!.egress![0]!;
    expect(dns.ports).toEqual([
      { protocol: 'UDP', port: 53 },
      { protocol: 'TCP', port: 53 },
    ]);
    expect(dns.to).toEqual([
      {
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
        podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
      },
    ]);
  });

  it('gives sandbox pods no service account token', () => {
    expect(isolation.find((doc) => doc.kind === 'ServiceAccount')).toEqual({
      apiVersion: 'v1',
      kind: 'ServiceAccount',
      metadata: { name: 'default', namespace: 'sandboxes' },
      automountServiceAccountToken: false,
    });
  });
});

describe('deploy/temporal-setup.yaml', () => {
  const objects = documents('temporal-setup.yaml') as unknown as Array<Record<string, any>>; // eslint-disable-line @typescript-eslint/no-explicit-any
  const configMap = objects.find((doc) => doc.metadata?.name === 'temporal-setup')!;
  const dynamicConfig = objects.find((doc) => doc.metadata?.name === 'temporal-dynamic-config')!;
  const jobs = objects.filter((doc) => doc.kind === 'Job');
  const composeJobs = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), {
    merge: true,
  }) as { services: Record<string, { image: string; environment: Record<string, string> }> };

  it('carries environments/temporal-tier/setup.sh byte for byte (the one source of the steps)', () => {
    expect(configMap.data['setup.sh']).toBe(
      readFileSync(join(ROOT, 'environments/temporal-tier/setup.sh'), 'utf8'),
    );
  });

  it('carries environments/temporal-tier/dynamicconfig.yaml byte for byte, with eager activity dispatch on', () => {
    expect(dynamicConfig.kind).toBe('ConfigMap');
    const file = readFileSync(join(ROOT, 'environments/temporal-tier/dynamicconfig.yaml'), 'utf8');
    expect(dynamicConfig.data['dynamicconfig.yaml']).toBe(file);
    expect(parse(file)).toMatchObject({
      'system.enableActivityEagerExecution': [{ value: true }],
    });
  });

  it('runs the schema step and the namespace step as the compose jobs do, on the same image and settings', () => {
    expect(jobs.map((job) => job.metadata.name)).toEqual(['temporal-schema', 'temporal-namespace']);
    for (const job of jobs) {
      const container = job.spec.template.spec.containers[0];
      const step = job.metadata.name === 'temporal-schema' ? 'schema' : 'namespace';
      expect([...container.command, ...container.args]).toEqual([
        'sh',
        `${container.volumeMounts[0].mountPath}/setup.sh`,
        step,
      ]);
      expect(job.spec.template.spec.volumes[0].configMap.name).toBe(configMap.metadata.name);
      const composeJob = composeJobs.services[job.metadata.name]!;
      expect(container.image).toBe(composeJob.image);
      const names = (container.env as Array<{ name: string }>).map((variable) => variable.name);
      expect(names.sort()).toEqual(Object.keys(composeJob.environment).sort());
      const values = Object.fromEntries(
        (container.env as Array<{ name: string; value?: string }>).map((v) => [v.name, v.value]),
      );
      for (const name of [
        'SEARCH_ATTRIBUTES',
        'NAMESPACE_RETENTION',
        'SCHEMA_DIR',
        'TEMPORAL_DB',
      ]) {
        expect(values[name], name).toBe(composeJob.environment[name]);
      }
      expect(values.TEMPORAL_ADDRESS).toBe(
        deployment('worker.yaml').spec!.template.spec!.containers[0]!.env!.find(
          (v) => v.name === 'TEMPORAL_ADDRESS',
        )?.value,
      );
    }
  });
});
