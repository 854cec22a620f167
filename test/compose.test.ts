/**
 * The production files, checked for structure (there is no Docker engine or cluster here):
 * docker-compose.yml against the config module, the search attributes and the Temporal tier's
 * set-up steps (environments/temporal-tier/setup.sh, run for real by the topology), the Dockerfile's
 * stages, and deploy/rbac.yaml's grants.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { SearchAttributeType } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { CONFIG_VARIABLES, loadConfig } from '../src/config/index.js';
import { DEFAULT_TENANT_LIMITS } from '../src/config/tenant-limits.js';
import { callerNamespaceOf } from '../src/nexus/tenants.js';
import { SEARCH_ATTRIBUTE_KEYS } from '../src/temporal/search-attribute-keys.js';
import {
  DYNAMIC_CONFIG,
  SETUP_SCRIPT,
  setupEnvironment,
} from '../environments/temporal-tier/launcher.js';

const ROOT = normalize(join(import.meta.dirname, '..'));
const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');

interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  ports?: string[];
  volumes?: Array<string | { type: string; source: string; target: string; read_only?: boolean }>;
  depends_on?: Record<string, { condition: string }>;
  healthcheck?: { test: string[] };
  deploy?: { replicas?: number };
  container_name?: string;
}
const compose = parse(read('docker-compose.yml'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const service = (name: string): Service => {
  const found = services[name];
  if (!found) throw new Error(`docker-compose.yml has no service ${name}`);
  return found;
};

/** The environment with compose's `${NAME:-default}` / `${NAME:?message}` resolved as unset. */
function resolvedEnvironment(name: string): Record<string, string> {
  return Object.fromEntries(
    Object.entries(service(name).environment ?? {}).map(([key, value]) => [
      key,
      String(value)
        .replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1')
        .replace(/\$\{[A-Z_]+:\?[^}]*\}/g, 'tenant-a:token-a'),
    ]),
  );
}

const APP_SERVICES = ['api', 'worker'] as const;

describe('docker-compose.yml', () => {
  it('has the production services and no others', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'api',
        'postgresql',
        'temporal',
        'temporal-namespace',
        'temporal-schema',
        'temporal-ui',
        'worker',
      ].sort(),
    );
  });

  it('pins every image to a version, never latest', () => {
    for (const [name, { image }] of Object.entries(services)) {
      expect(image, `${name}: image`).toMatch(/^[a-z0-9./_-]+:[A-Za-z0-9._-]+$/);
      expect(image, `${name}: image`).not.toMatch(/:latest$/);
    }
    // Images Temporal maintains; temporalio/auto-setup is deprecated and no longer built.
    expect(service('temporal').image).toBe('temporalio/server:1.29.1');
    expect(service('temporal-schema').image).toMatch(/^temporalio\/admin-tools:1\.29\.1-/);
    expect(service('temporal-namespace').image).toBe(service('temporal-schema').image);
    expect(read('docker-compose.yml')).not.toContain('auto-setup:');
    expect(service('temporal-ui').image).toBe('temporalio/ui:2.42.1');
    expect(service('postgresql').image).toMatch(/^postgres:16[.-]/);
    for (const name of APP_SERVICES) {
      expect(service(name).build, `${name} builds the Dockerfile`).toBe('.');
      expect(service(name).image).toBe(service('api').image);
    }
  });

  it('publishes the api, the Temporal frontend and the UI, and no worker port', () => {
    expect(service('api').ports).toEqual([`8080:${resolvedEnvironment('api').PORT}`]);
    // The plaintext frontend and its UI only on the host's loopback, not every interface.
    expect(service('temporal').ports).toEqual(['127.0.0.1:7233:7233']);
    expect(service('temporal-ui').ports).toEqual(['127.0.0.1:8233:8080']);
    expect(service('worker').ports).toBeUndefined();
    expect(service('postgresql').ports).toBeUndefined();
  });

  it('gives the api and the workers only variables the config module reads, and the ones they need', () => {
    const required = {
      api: ['TEMPORAL_ADDRESS', 'DATABASE_URL', 'KUBECONFIG', 'API_TOKENS', 'PORT'],
      worker: ['TEMPORAL_ADDRESS', 'DATABASE_URL', 'KUBECONFIG'],
    };
    for (const name of APP_SERVICES) {
      const names = Object.keys(service(name).environment ?? {});
      expect(
        names.filter((variable) => !(CONFIG_VARIABLES as readonly string[]).includes(variable)),
        name,
      ).toEqual([]);
      expect(names, name).toEqual(expect.arrayContaining(required[name]));
    }
    expect(service('worker').environment).not.toHaveProperty('API_TOKENS');
    expect(service('api').environment?.API_TOKENS).toMatch(/^\$\{API_TOKENS:\?/);
  });

  it("configures the api and the workers validly, against the stack's own services", () => {
    const postgres = service('postgresql').environment ?? {};
    for (const name of APP_SERVICES) {
      const config = loadConfig(resolvedEnvironment(name));
      expect(config.temporalAddress, name).toBe('temporal:7233');
      const url = new URL(config.databaseUrl ?? '');
      expect(url.hostname, name).toBe('postgresql');
      expect(url.username, name).toBe(postgres.POSTGRES_USER);
      expect(decodeURIComponent(url.password), name).toBe(
        postgres.POSTGRES_PASSWORD?.replace(/\$\{[A-Z_]+:-([^}]*)\}/, '$1'),
      );
      expect(url.pathname, name).toBe(`/${postgres.POSTGRES_DB}`);
    }
    expect(loadConfig(resolvedEnvironment('api')).devToken).toBe(false);
  });

  it("passes TENANT_LIMITS to the api and the workers, unset giving a shared installation's defaults", () => {
    for (const name of APP_SERVICES) {
      expect(service(name).environment?.TENANT_LIMITS, name).toBe('${TENANT_LIMITS:-}');
      expect(loadConfig(resolvedEnvironment(name)).tenantLimits.default, name).toEqual(
        DEFAULT_TENANT_LIMITS,
      );
    }
  });

  it('sets LOG_FORMAT=json for the api and the workers: JSON lines, a failed start included', () => {
    for (const name of APP_SERVICES) {
      expect(resolvedEnvironment(name).LOG_FORMAT, name).toBe('json');
      expect(loadConfig(resolvedEnvironment(name)).logFormat, name).toBe('json');
    }
  });

  it('mounts the kubeconfig read-only where KUBECONFIG points', () => {
    for (const name of APP_SERVICES) {
      const mount = service(name).volumes?.find(
        (volume) =>
          typeof volume === 'object' && volume.target === service(name).environment?.KUBECONFIG,
      );
      expect(mount, `${name}: kubeconfig mount`).toMatchObject({
        type: 'bind',
        source: '${KUBECONFIG_HOST_PATH:-./kubeconfig}',
        read_only: true,
      });
    }
  });

  it('runs two worker replicas and the api from one image, each with its entry point', () => {
    expect(service('worker').deploy?.replicas).toBe(2);
    expect(service('worker').container_name).toBeUndefined();
    expect(service('worker').command).toEqual(['src/worker/main.ts']);
    expect(service('api').command).toEqual(['src/api/main.ts']);
    for (const name of APP_SERVICES) {
      expect(existsSync(join(ROOT, service(name).command?.[0] ?? '')), name).toBe(true);
    }
  });

  it('has a health check on every long-running service', () => {
    for (const [name, { healthcheck }] of Object.entries(services)) {
      if (name === 'temporal-schema' || name === 'temporal-namespace') continue; // one-shot jobs
      expect(healthcheck?.test?.[0], `${name}: healthcheck`).toMatch(/^CMD(-SHELL)?$/);
    }
    expect(service('api').healthcheck?.test.join(' ')).toContain(
      `http://127.0.0.1:${resolvedEnvironment('api').PORT}/readyz`,
    );
    expect(service('worker').healthcheck?.test).toEqual([
      'CMD',
      'node',
      '--import',
      'tsx',
      'src/worker/healthcheck.ts',
    ]);
    expect(existsSync(join(ROOT, 'src/worker/healthcheck.ts'))).toBe(true);
    expect(service('postgresql').healthcheck?.test).toContain('pg_isready');
    expect(service('temporal').healthcheck?.test.join(' ')).toContain(':7243/api/v1/cluster-info');
  });

  it('starts each service after what it needs is healthy or done', () => {
    const appDependencies = {
      postgresql: { condition: 'service_healthy' },
      temporal: { condition: 'service_healthy' },
      'temporal-namespace': { condition: 'service_completed_successfully' },
    };
    expect(service('api').depends_on).toEqual(appDependencies);
    expect(service('worker').depends_on).toEqual(appDependencies);
    expect(service('temporal-schema').depends_on).toEqual({
      postgresql: { condition: 'service_healthy' },
    });
    expect(service('temporal').depends_on).toEqual({
      postgresql: { condition: 'service_healthy' },
      'temporal-schema': { condition: 'service_completed_successfully' },
    });
    expect(service('temporal-ui').depends_on).toEqual({
      temporal: { condition: 'service_healthy' },
    });
    expect(service('temporal-namespace').depends_on).toEqual({
      temporal: { condition: 'service_healthy' },
    });
    for (const [name, { depends_on }] of Object.entries(services)) {
      for (const [dependency, { condition }] of Object.entries(depends_on ?? {})) {
        if (condition === 'service_healthy') {
          expect(
            service(dependency).healthcheck,
            `${name} waits for ${dependency}'s health`,
          ).toBeDefined();
        }
      }
    }
  });

  it('points Temporal at the PostgreSQL service', () => {
    const temporal = service('temporal').environment ?? {};
    const postgres = service('postgresql').environment ?? {};
    expect(temporal).toMatchObject({
      DB: 'postgres12',
      DB_PORT: '5432',
      POSTGRES_SEEDS: 'postgresql',
      POSTGRES_USER: postgres.POSTGRES_USER,
      POSTGRES_PWD: postgres.POSTGRES_PASSWORD,
    });
  });

  it('runs the set-up steps from the file the local topology runs, schema before the server', () => {
    for (const [name, step] of [
      ['temporal-schema', 'schema'],
      ['temporal-namespace', 'namespace'],
    ] as const) {
      const job = service(name);
      const mount = job.volumes?.find(
        (volume) => typeof volume === 'object' && volume.source.endsWith('setup.sh'),
      );
      expect(mount, name).toMatchObject({
        type: 'bind',
        source: './environments/temporal-tier/setup.sh',
        read_only: true,
      });
      const target = typeof mount === 'object' ? mount.target : '';
      expect([...(job.entrypoint ?? []), ...(job.command ?? [])], name).toEqual([
        'sh',
        target,
        step,
      ]);
    }
    expect(existsSync(join(ROOT, 'environments/temporal-tier/setup.sh'))).toBe(true);
    // The launcher runs the same file.
    expect(SETUP_SCRIPT).toBe(join(ROOT, 'environments/temporal-tier/setup.sh'));
  });

  it("runs the server on the tier's dynamic config file, with eager dispatch and task queue fairness on", () => {
    const server = service('temporal');
    const path = server.environment?.DYNAMIC_CONFIG_FILE_PATH;
    const mount = server.volumes?.find(
      (volume) => typeof volume === 'object' && volume.target === path,
    );
    expect(mount).toEqual({
      type: 'bind',
      source: './environments/temporal-tier/dynamicconfig.yaml',
      target: path,
      read_only: true,
    });
    // The launcher writes the same file into the local tier's server.
    expect(DYNAMIC_CONFIG).toBe(join(ROOT, 'environments/temporal-tier/dynamicconfig.yaml'));
    expect(parse(read('environments/temporal-tier/dynamicconfig.yaml'))).toMatchObject({
      'system.enableActivityEagerExecution': [{ value: true }],
      // Each tenant's workflows a share of a backlog by their fairness key (src/temporal/priority.ts).
      'matching.enableFairness': [{ value: true }],
    });
  });

  it('lets Nexus callbacks through: a callback URL template whose host is the one allowed address and whose path names the caller', () => {
    const config = parse(read('environments/temporal-tier/dynamicconfig.yaml')) as Record<
      string,
      Array<{ value: unknown }>
    >;
    const template = config['component.nexusoperations.callback.endpoint.template']?.[0]?.value;
    const allowed = config['component.callbacks.allowedAddresses']?.[0]?.value;
    expect(
      typeof template,
      'the template is set (the server default "unset" fails every operation)',
    ).toBe('string');
    const url = new URL(String(template).replace('{{.NamespaceName}}', 'payments-agents'));
    expect(allowed).toEqual([{ Pattern: url.host, AllowInsecure: url.protocol === 'http:' }]);
    // The handler reads the calling namespace from this path (src/nexus/tenants.ts).
    expect(callerNamespaceOf({ callbackUrl: url.href, inboundLinks: [] })).toBe('payments-agents');
  });

  it('gives both jobs exactly the settings setup.sh reads, as the launcher sets them', () => {
    const script = read('environments/temporal-tier/setup.sh');
    const read_ = new Set(
      [...script.matchAll(/\$\{?([A-Z][A-Z0-9_]+)/g)].map((match) => match[1] as string),
    );
    const local = setupEnvironment({
      database: { host: 'h', port: 5432, user: 'u', password: 'p' },
      namespace: 'default',
      retention: '72h',
      schemaDir: '/schema',
    });
    // The launcher adds the binaries' paths; compose uses admin-tools' PATH.
    const localNames = [...Object.keys(local), 'TEMPORAL_ADDRESS'].sort();
    expect(
      [...read_].filter((name) => !['TEMPORAL_SQL_TOOL', 'TEMPORAL_CLI'].includes(name)).sort(),
    ).toEqual(localNames);
    for (const name of ['temporal-schema', 'temporal-namespace']) {
      const env = resolvedEnvironment(name);
      expect(Object.keys(env).sort(), name).toEqual(localNames);
      expect(env.SQL_PLUGIN, name).toBe(local.SQL_PLUGIN);
      expect(env.SEARCH_ATTRIBUTES, name).toBe(local.SEARCH_ATTRIBUTES);
      expect(env.NAMESPACE_RETENTION, name).toBe(local.NAMESPACE_RETENTION);
      expect(env.TEMPORAL_DB, name).toBe(local.TEMPORAL_DB);
      expect(env.TEMPORAL_VISIBILITY_DB, name).toBe(local.TEMPORAL_VISIBILITY_DB);
      expect(env.SCHEMA_DIR, name).toBe('/etc/temporal/schema/postgresql/v12');
    }
  });

  it('registers exactly the search attributes the workflows upsert, all Keyword', () => {
    const listed = resolvedEnvironment('temporal-namespace').SEARCH_ATTRIBUTES?.split(/\s+/);
    expect(listed).toEqual(SEARCH_ATTRIBUTE_KEYS.map((key) => key.name));
    expect(SEARCH_ATTRIBUTE_KEYS.every((key) => key.type === SearchAttributeType.KEYWORD)).toBe(
      true,
    );
    const env = resolvedEnvironment('temporal-namespace');
    expect(env.TEMPORAL_NAMESPACE).toBe(resolvedEnvironment('worker').TEMPORAL_NAMESPACE);
    expect(env.TEMPORAL_ADDRESS).toBe(resolvedEnvironment('worker').TEMPORAL_ADDRESS);
  });

  it('points the server and the schema job at the same databases', () => {
    const temporal = resolvedEnvironment('temporal');
    const setup = resolvedEnvironment('temporal-schema');
    expect(temporal.POSTGRES_SEEDS).toBe(setup.SQL_HOST);
    expect(temporal.DB_PORT).toBe(setup.SQL_PORT);
    expect(temporal.POSTGRES_USER).toBe(setup.SQL_USER);
    expect(temporal.POSTGRES_PWD).toBe(setup.SQL_PASSWORD);
    expect(temporal.DBNAME).toBe(setup.TEMPORAL_DB);
    expect(temporal.VISIBILITY_DBNAME).toBe(setup.TEMPORAL_VISIBILITY_DB);
  });
});

/** The Dockerfile's stages: `FROM … AS name` and the instructions under it. */
function dockerfileStages(text: string) {
  const lines = text
    .replace(/\\\n/g, ' ')
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'));
  const stages: Array<{ name: string; instructions: Array<[string, string]> }> = [];
  for (const line of lines) {
    const [keyword = '', ...rest] = line.split(/\s+/);
    const argument = rest.join(' ');
    if (keyword.toUpperCase() === 'FROM') {
      stages.push({ name: /\bAS\s+(\S+)/i.exec(argument)?.[1] ?? '', instructions: [] });
    } else {
      stages.at(-1)?.instructions.push([keyword.toUpperCase(), argument]);
    }
  }
  return stages;
}

/** Top-level folders of every file the entry points import, transitively (relative imports). */
function importedFolders(entries: string[]): Set<string> {
  const seen = new Set<string>();
  const pending = [...entries];
  while (pending.length > 0) {
    const file = pending.pop() as string;
    if (seen.has(file)) continue;
    seen.add(file);
    const source = read(file);
    for (const [, specifier] of source.matchAll(/(?:from|import)\s*\(?\s*'(\.\.?\/[^']+)'/g)) {
      const target = normalize(join(dirname(file), specifier as string)).replace(/\.js$/, '.ts');
      if (target.endsWith('.ts')) pending.push(target);
    }
  }
  return new Set([...seen].map((file) => file.split('/')[0] as string));
}

describe('Dockerfile', () => {
  const stages = dockerfileStages(read('Dockerfile'));
  const runtime = stages.at(-1);
  const build = stages[0];
  const instructions = (stage: typeof runtime, keyword: string) =>
    (stage?.instructions ?? []).filter(([k]) => k === keyword).map(([, argument]) => argument);

  it('builds with dev dependencies in one stage and runs with production ones in another', () => {
    expect(stages.length).toBeGreaterThanOrEqual(2);
    expect(instructions(build, 'RUN').join('\n')).toMatch(/npm ci\b/);
    expect(instructions(build, 'RUN').join('\n')).toMatch(/--omit=dev/);
    expect(instructions(runtime, 'COPY')).toContain(
      `--from=${build?.name} /app/node_modules node_modules`,
    );
  });

  it('runs as the unprivileged node user under tini, the worker by default', () => {
    const user = instructions(runtime, 'USER');
    expect(user).toEqual(['node']);
    const entrypoint = JSON.parse(instructions(runtime, 'ENTRYPOINT')[0] ?? '[]') as string[];
    expect(entrypoint.slice(0, 2)).toEqual(['/usr/bin/tini', '--']);
    expect(entrypoint.slice(2)).toEqual(['node', '--import', 'tsx']);
    expect(instructions(runtime, 'RUN').join('\n')).toMatch(/apt-get install .*\btini\b/);
    expect(JSON.parse(instructions(runtime, 'CMD')[0] ?? '[]')).toEqual(['src/worker/main.ts']);
  });

  it('copies every folder the api, the worker and the health check import', () => {
    const copied = instructions(runtime, 'COPY').map((argument) => argument.split(/\s+/).at(-1));
    const needed = importedFolders([
      'src/api/main.ts',
      'src/worker/main.ts',
      'src/worker/healthcheck.ts',
    ]);
    expect([...needed].filter((folder) => !copied.includes(folder))).toEqual([]);
  });

  it('sets LOG_FORMAT=json in the runtime image (a failed start is a JSON line too)', () => {
    const env = instructions(runtime, 'ENV').join(' ');
    expect(env).toMatch(/(^|\s)LOG_FORMAT=json(\s|$)/);
  });

  it('keeps dependencies, local state and secrets out of the build context', () => {
    const ignored = read('.dockerignore').split('\n');
    expect(ignored).toEqual(
      expect.arrayContaining(['node_modules', '.git', '.data', 'kubeconfig']),
    );
  });
});

describe('package.json', () => {
  it('runs npm start, npm run api and npm run worker as node --import tsx, with no tsx CLI between', () => {
    // The tsx CLI relays a signal to its child and SIGKILLs the child when it has not answered
    // within 30 ms: a busy stack lost its graceful stop (and left stack.pid behind).
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> })
      .scripts;
    expect({ start: scripts.start, api: scripts.api, worker: scripts.worker }).toEqual({
      start: 'node --import tsx tools/start.ts',
      api: 'node --import tsx src/api/main.ts',
      worker: 'node --import tsx src/worker/main.ts',
    });
  });
});

describe('deploy/rbac.yaml', () => {
  const documents = parseAllDocuments(read('deploy/rbac.yaml')).map(
    (document) => document.toJS() as Record<string, any>, // eslint-disable-line @typescript-eslint/no-explicit-any
  );
  const byKind = (kind: string) => documents.find((document) => document.kind === kind);
  const namespace = loadConfig({}).sandboxNamespace;

  it("is the worker's Role and RoleBinding in the default sandbox namespace", () => {
    expect(documents.map((document) => document.kind)).toEqual(['Role', 'RoleBinding']);
    for (const document of documents) expect(document.metadata.namespace).toBe(namespace);
  });

  it('grants exactly pods create/get/list/watch/update/delete and events get/list/watch', () => {
    const rules = byKind('Role')?.rules as Array<{
      apiGroups: string[];
      resources: string[];
      verbs: string[];
    }>;
    const grants = Object.fromEntries(
      rules.flatMap((rule) => {
        expect(rule.apiGroups).toEqual(['']);
        return rule.resources.map((resource) => [resource, [...rule.verbs].sort()]);
      }),
    );
    expect(grants).toEqual({
      pods: ['create', 'delete', 'get', 'list', 'update', 'watch'],
      events: ['get', 'list', 'watch'],
    });
  });

  it("binds the Role to the worker's ServiceAccount only (the api's is bound to nothing)", () => {
    const binding = byKind('RoleBinding');
    expect(binding?.roleRef).toEqual({
      apiGroup: 'rbac.authorization.k8s.io',
      kind: 'Role',
      name: byKind('Role')?.metadata.name,
    });
    expect(binding?.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'durable-sandbox-worker', namespace: 'durable-sandbox' },
    ]);
  });
});

describe('CONFIG_VARIABLES', () => {
  it('names exactly the variables loadConfig reads', () => {
    const reads = new Set<string>();
    const env = new Proxy({} as NodeJS.ProcessEnv, {
      get(_target, property) {
        if (typeof property === 'string') reads.add(property);
        return undefined;
      },
    });
    loadConfig(env);
    expect([...reads].sort()).toEqual([...CONFIG_VARIABLES].sort());
  });
});
