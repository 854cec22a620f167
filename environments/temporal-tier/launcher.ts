/**
 * Starts and stops the Temporal server tier on PostgreSQL, as a platform team runs Temporal:
 *
 * 1. `setup.sh schema` (this folder; the compose file's schema job runs the same file): the
 *    schema tool creates the persistence and visibility databases and brings both schemas
 *    (the server module's schema/postgresql/v12) to the newest version;
 * 2. the Temporal server (`temporal-server start`, all four services in one process) from a
 *    config derived from the server module's config/development-postgres12.yaml: its
 *    persistence and SQL visibility point at the given PostgreSQL, every port is a free
 *    loopback port, archival and pprof are off, dynamic config is this folder's
 *    dynamicconfig.yaml (the compose file mounts the same file) written into the server's;
 * 3. `setup.sh namespace` once the frontend answers: the namespace with its retention and the
 *    search attributes of src/temporal/search-attribute-keys.ts, through the operator API (the
 *    Temporal CLI);
 * 4. the Temporal UI server, pointed at the frontend.
 *
 * With mTLS (the default), a CA of the tier's own (environments/tls/certificate-authority.ts)
 * signs the server's certificate (`temporal-frontend`, `localhost`, 127.0.0.1) and one client
 * certificate per caller: the frontend and the internode services require a certificate of that
 * CA from every client (`requireClientAuth`), the system worker, the set-up CLI, the UI server
 * and the launcher's own health check each present one, and {@link TemporalTier.clientEnv}
 * hands the API and worker processes theirs.
 *
 * Every process runs under the stdin guard (apiserver-tier/process.ts): it dies with its parent.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Connection, type ConnectionOptions } from '@temporalio/client';
import { parse, stringify } from 'yaml';
import { startGuarded, type GuardedProcess } from '../apiserver-tier/process.js';
import { findGo } from '../binaries/binary-lookup.js';
import { locateTemporalCli } from '../binaries/temporal-cli.js';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/temporal/search-attribute-keys.js';
import {
  clientConnectionOptions,
  parseTemporalCredentials,
} from '../../src/config/temporal-connection.js';
import {
  createCertificateAuthority,
  type CertificateAuthority,
} from '../tls/certificate-authority.js';
import { locateTemporalTierBinaries } from './binaries.js';

const run = promisify(execFile);
const HERE = fileURLToPath(new URL('.', import.meta.url));
/** The set-up steps' one source (see the file's header). */
export const SETUP_SCRIPT = join(HERE, 'setup.sh');
/** The server's dynamic config, the one source (see the file's header). */
export const DYNAMIC_CONFIG = join(HERE, 'dynamicconfig.yaml');

/** Where the tier's server keeps its state: a PostgreSQL role that may create databases. */
export interface TemporalTierDatabase {
  host: string;
  port: number;
  user: string;
  password: string;
  /** Persistence database name (default `temporal`). */
  temporalDb?: string;
  /** SQL visibility database name (default `temporal_visibility`). */
  visibilityDb?: string;
}

/** Options of {@link startTemporalTier}. */
export interface TemporalTierOptions {
  database: TemporalTierDatabase;
  /** The namespace registered (default `default`). */
  namespace?: string;
  /** Its workflow retention, as the CLI takes it (default `72h`). */
  retention?: string;
  /** Serve the Temporal UI (default true). */
  ui?: boolean;
  /**
   * Require a client certificate of the tier's own CA from every client (default true); false
   * serves plaintext to anyone.
   */
  mtls?: boolean;
  /** How long to wait for the frontend, in ms (default 120000). */
  startTimeoutMs?: number;
  /** Receives the processes' output lines (default: discarded). */
  log?: (line: string) => void;
}

/** A running tier. */
export interface TemporalTier {
  /** The frontend's gRPC `127.0.0.1:<port>`. */
  address: string;
  /** `http://127.0.0.1:<port>` of the UI, when served. */
  uiUrl?: string;
  /** `http://127.0.0.1:<port>/metrics`: the server's Prometheus metrics. */
  metricsUrl: string;
  namespace: string;
  /** The tier's CA and the name on the server's certificate; unset without mTLS. */
  tls?: { caPath: string; serverName: string };
  /**
   * The connection variables (src/config/temporal-connection.ts, the Temporal CLI's names) of a
   * client called `name`: a client certificate of the tier's CA (`CN=<name>`), made on the
   * first call, the CA and the server name. Empty without mTLS.
   */
  clientEnv(name: string): Promise<Record<string, string>>;
  /** Time from the start of the schema set-up to the namespace being registered, in ms. */
  startToReadyMs: number;
  /** Stops the Temporal server (SIGTERM, its graceful shutdown); the UI keeps running. */
  stopServer(): Promise<void>;
  /** Starts the server again with the same config and data; resolves once it answers. */
  startServer(): Promise<void>;
  /** Stops the UI and the server and removes the config directory. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Sets up the schemas, starts the server, registers the namespace and serves the UI.
 * @throws Error when a binary cannot be found or built, a set-up step fails, or the frontend
 *   does not answer within `startTimeoutMs`; everything started is stopped first.
 */
export async function startTemporalTier(options: TemporalTierOptions): Promise<TemporalTier> {
  const binaries = await locateTemporalTierBinaries();
  const cli = locateTemporalCli();
  const log = options.log ?? (() => {});
  const namespace = options.namespace ?? 'default';
  const startedAtMs = Date.now();
  const serverModule = await serverModuleDir();
  const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-temporal-'));
  const db = options.database;
  const mtls = options.mtls ?? true;
  const ca = mtls ? await createCertificateAuthority(join(dir, 'tls')) : undefined;
  const issued = new Map<string, Promise<Record<string, string>>>();
  const clientEnv = (name: string): Promise<Record<string, string>> => {
    if (!ca) return Promise.resolve({});
    let env = issued.get(name);
    if (!env) {
      env = ca.issueClient(name).then((client) => ({
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: ca.caPath,
        TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
        TEMPORAL_TLS_CLIENT_CERT_PATH: client.certPath,
        TEMPORAL_TLS_CLIENT_KEY_PATH: client.keyPath,
      }));
      issued.set(name, env);
    }
    return env;
  };
  const setupEnv = {
    ...process.env,
    ...setupEnvironment({
      database: db,
      namespace,
      retention: options.retention ?? '72h',
      schemaDir: join(serverModule, 'schema', 'postgresql', 'v12'),
    }),
    TEMPORAL_SQL_TOOL: binaries.sqlTool,
    TEMPORAL_CLI: cli,
    // The CLI reads the same variables as the service (src/config/temporal-connection.ts).
    ...(await clientEnv('temporal-setup')),
  };
  const setup = async (step: 'schema' | 'namespace', address?: string) => {
    const { stdout } = await run('sh', [SETUP_SCRIPT, step], {
      env: { ...setupEnv, ...(address ? { TEMPORAL_ADDRESS: address } : {}) },
      maxBuffer: 16 * 1024 * 1024,
    }).catch((err: Error & { stderr?: string }) => {
      throw new Error(`setup.sh ${step} failed: ${err.message}\n${err.stderr ?? ''}`);
    });
    for (const line of stdout.split('\n')) if (line.startsWith('setup:')) log(line);
  };

  let server: GuardedProcess | undefined;
  let ui: GuardedProcess | undefined;
  const cleanup = async () => {
    await ui?.stop();
    await server?.stop(30_000);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await setup('schema');
    const ports = await distinctFreePorts(11);
    const address = `127.0.0.1:${ports[0]}`;
    writeServerConfig(dir, serverModule, db, setupEnv, ports, ca && (await serverTls(ca)));
    const probeCredentials = parseTemporalCredentials(await clientEnv('temporal-tier-probe'));
    const startServer = async () => {
      server = startGuarded(
        'temporal-server',
        binaries.server,
        ['--root', dir, '--config', 'config', '--env', 'production', '--allow-no-auth', 'start'],
        (line) => log(`temporal-server: ${line}`),
      );
      await waitUntilServing(
        clientConnectionOptions(address, probeCredentials),
        options.startTimeoutMs ?? 120_000,
        server,
      );
    };
    await startServer();
    await setup('namespace', address);
    let uiUrl: string | undefined;
    if (options.ui ?? true) {
      const uiPort = ports[9]!;
      uiUrl = `http://127.0.0.1:${uiPort}`;
      writeUiConfig(
        join(dir, 'ui'),
        address,
        uiPort,
        namespace,
        await clientEnv('temporal-ui-server'),
      );
      ui = startGuarded(
        'temporal-ui-server',
        binaries.uiServer,
        ['--root', join(dir, 'ui'), '--config', 'config', '--env', 'production', 'start'],
        (line) => log(`temporal-ui: ${line}`),
      );
      await waitForUi(uiUrl, options.startTimeoutMs ?? 120_000, ui);
    }
    let stopping: Promise<void> | undefined;
    return {
      address,
      uiUrl,
      metricsUrl: `http://127.0.0.1:${ports[10]}/metrics`,
      namespace,
      tls: ca ? { caPath: ca.caPath, serverName: SERVER_NAME } : undefined,
      clientEnv,
      startToReadyMs: Date.now() - startedAtMs,
      async stopServer() {
        await server?.stop(30_000);
        server = undefined;
      },
      startServer,
      stop: () => (stopping ??= cleanup()),
    };
  } catch (err) {
    await cleanup();
    throw err;
  }
}

/**
 * The settings setup.sh reads (its header names them), as the compose file's
 * `x-temporal-setup-environment` sets them too; test/compose.test.ts keeps the two in step.
 * `TEMPORAL_ADDRESS` is added for the namespace step, and the binaries' paths
 * (TEMPORAL_SQL_TOOL, TEMPORAL_CLI) by the launcher.
 */
export function setupEnvironment(input: {
  database: TemporalTierDatabase;
  namespace: string;
  retention: string;
  schemaDir: string;
}): Record<string, string> & { TEMPORAL_DB: string; TEMPORAL_VISIBILITY_DB: string } {
  const db = input.database;
  return {
    SQL_PLUGIN: 'postgres12',
    SQL_HOST: db.host,
    SQL_PORT: String(db.port),
    SQL_USER: db.user,
    SQL_PASSWORD: db.password,
    TEMPORAL_DB: db.temporalDb ?? 'temporal',
    TEMPORAL_VISIBILITY_DB: db.visibilityDb ?? 'temporal_visibility',
    SCHEMA_DIR: input.schemaDir,
    TEMPORAL_NAMESPACE: input.namespace,
    NAMESPACE_RETENTION: input.retention,
    SEARCH_ATTRIBUTES: SEARCH_ATTRIBUTE_KEYS.map((key) => key.name).join(' '),
  };
}

/**
 * The config: the server module's development-postgres12.yaml with this tier's database,
 * ports (frontend gRPC, frontend HTTP, the four membership ports, history, matching and worker
 * gRPC, UI, metrics), archival off and pprof off, Prometheus metrics on their own port, and
 * the dynamic config of {@link DYNAMIC_CONFIG}.
 */
function writeServerConfig(
  dir: string,
  serverModule: string,
  db: TemporalTierDatabase,
  setupEnv: { TEMPORAL_DB: string; TEMPORAL_VISIBILITY_DB: string },
  ports: number[],
  tls: ServerConfig['global']['tls'],
): void {
  const template = parse(
    readFileSync(join(serverModule, 'config', 'development-postgres12.yaml'), 'utf8'),
  ) as ServerConfig;
  const config = structuredClone(template);
  const [frontend, http, frontendM, history, historyM, matching, matchingM, worker, workerM] =
    ports as [number, number, number, number, number, number, number, number, number];
  config.log = { stdout: true, level: 'error' };
  const stores = config.persistence.datastores;
  for (const [name, dbName] of [
    ['postgres-default', setupEnv.TEMPORAL_DB],
    ['postgres-visibility', setupEnv.TEMPORAL_VISIBILITY_DB],
  ] as const) {
    Object.assign(stores[name]!.sql, {
      databaseName: dbName,
      connectAddr: `${db.host}:${db.port}`,
      user: db.user,
      password: db.password,
    });
  }
  config.global.pprof = { port: 0 };
  if (tls) config.global.tls = tls;
  config.global.metrics = {
    prometheus: {
      framework: 'tally',
      timerType: 'histogram',
      listenAddress: `127.0.0.1:${ports[10]}`,
    },
  };
  const rpc = (grpcPort: number, membershipPort: number) => ({
    grpcPort,
    membershipPort,
    bindOnLocalHost: true,
  });
  config.services = {
    frontend: { rpc: { ...rpc(frontend, frontendM), httpPort: http } },
    history: { rpc: rpc(history, historyM) },
    matching: { rpc: rpc(matching, matchingM) },
    worker: { rpc: rpc(worker, workerM) },
  };
  config.clusterMetadata.clusterInformation.active!.rpcAddress = `127.0.0.1:${frontend}`;
  config.archival = { history: { state: 'disabled' }, visibility: { state: 'disabled' } };
  config.namespaceDefaults = {
    archival: { history: { state: 'disabled' }, visibility: { state: 'disabled' } },
  };
  const dynamicConfig = join(dir, 'dynamicconfig.yaml');
  const settings = parse(readFileSync(DYNAMIC_CONFIG, 'utf8')) as Record<string, unknown>;
  writeFileSync(
    dynamicConfig,
    stringify({
      ...settings,
      // Local only: a search attribute registered a moment ago is usable at once (the dev
      // server sets the same); Temporal meant it for tests, so the shared file leaves it out.
      'system.forceSearchAttributesCacheRefreshOnRead': [{ value: true }],
    }),
  );
  config.dynamicConfigClient = { filepath: dynamicConfig, pollInterval: '10s' };
  mkdirSync(join(dir, 'config'));
  writeFileSync(join(dir, 'config', 'production.yaml'), stringify(config));
}

/** The parts of the server's config this file rewrites. */
interface ServerConfig {
  log?: unknown;
  persistence: { datastores: Record<string, { sql: Record<string, unknown> }> };
  global: { pprof?: unknown; metrics?: unknown; tls?: unknown };
  services: Record<string, unknown>;
  clusterMetadata: { clusterInformation: Record<string, { rpcAddress: string }> };
  archival?: unknown;
  namespaceDefaults?: unknown;
  dynamicConfigClient?: unknown;
}

/** The name on the server's certificate, which every client of the tier verifies. */
const SERVER_NAME = 'temporal-frontend';

/**
 * The server's `global.tls` (the server's common/config/config.go, RootTLS): one server
 * certificate for the frontend and the internode services, each requiring a client certificate
 * of the CA, and the system worker's own client certificate.
 */
async function serverTls(ca: CertificateAuthority): Promise<ServerConfig['global']['tls']> {
  const server = await ca.issueServer('temporal-server', {
    dnsNames: [SERVER_NAME, 'localhost'],
    ipAddresses: ['127.0.0.1'],
  });
  const systemWorker = await ca.issueClient('temporal-system-worker');
  const group = {
    server: {
      certFile: server.certPath,
      keyFile: server.keyPath,
      requireClientAuth: true,
      clientCaFiles: [ca.caPath],
    },
    client: { serverName: SERVER_NAME, rootCaFiles: [ca.caPath] },
  };
  return {
    internode: group,
    frontend: group,
    systemWorker: {
      certFile: systemWorker.certPath,
      keyFile: systemWorker.keyPath,
      client: { serverName: SERVER_NAME, rootCaFiles: [ca.caPath] },
    },
  };
}

/**
 * The UI server's config (its own config/development.yaml's keys); `clientEnv` its client
 * certificate variables (see {@link TemporalTier.clientEnv}), empty for plaintext.
 */
function writeUiConfig(
  root: string,
  address: string,
  port: number,
  namespace: string,
  clientEnv: Record<string, string>,
): void {
  mkdirSync(join(root, 'config'), { recursive: true });
  writeFileSync(
    join(root, 'config', 'production.yaml'),
    stringify({
      temporalGrpcAddress: address,
      host: '127.0.0.1',
      port,
      enableUi: true,
      defaultNamespace: namespace,
      notifyOnNewVersion: false,
      cors: { cookieInsecure: true, allowOrigins: [`http://127.0.0.1:${port}`] },
      ...(clientEnv.TEMPORAL_TLS_CLIENT_CERT_PATH
        ? {
            tls: {
              caFile: clientEnv.TEMPORAL_TLS_SERVER_CA_CERT_PATH,
              certFile: clientEnv.TEMPORAL_TLS_CLIENT_CERT_PATH,
              keyFile: clientEnv.TEMPORAL_TLS_CLIENT_KEY_PATH,
              serverName: clientEnv.TEMPORAL_TLS_SERVER_NAME,
              enableHostVerification: true,
            },
          }
        : {}),
    }),
  );
}

/**
 * The server module's folder in the Go module cache (its schemas and configs): TEMPORAL_SERVER_MODULE_DIR,
 * else `go mod download -json go.temporal.io/server` in the tier's wrapper module.
 * @throws Error when neither is available
 */
async function serverModuleDir(): Promise<string> {
  if (process.env.TEMPORAL_SERVER_MODULE_DIR) return process.env.TEMPORAL_SERVER_MODULE_DIR;
  const go = findGo();
  if (!go) {
    throw new Error(
      'The Temporal server module (schemas, config) is needed: install Go, or set ' +
        'TEMPORAL_SERVER_MODULE_DIR to a checkout of go.temporal.io/server v1.29.1.',
    );
  }
  const { stdout } = await run(go, ['mod', 'download', '-json', 'go.temporal.io/server'], {
    cwd: join(HERE, 'go'),
  });
  return (JSON.parse(stdout) as { Dir: string }).Dir;
}

/**
 * `count` distinct ports free on 127.0.0.1, below 32768: the SQL schema stores membership ports
 * as `smallint` (cluster_membership.rpc_port), so the kernel's ephemeral range (32768+) that
 * src/process/free-port.ts hands out is refused.
 */
async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) {
    const port = 20_000 + Math.floor(Math.random() * 12_000);
    if (!ports.has(port) && (await isFree(port))) ports.add(port);
  }
  return [...ports];
}

function isFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

/** Resolves once the UI server answers its index page with 200. */
async function waitForUi(url: string, timeoutMs: number, ui: GuardedProcess): Promise<void> {
  const deadlineAtMs = Date.now() + timeoutMs;
  while (Date.now() < deadlineAtMs) {
    if (ui.exitCode() !== undefined) {
      throw new Error(`temporal-ui-server exited at start:\n${ui.recentOutput()}`);
    }
    const status = await fetch(url).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`temporal-ui-server at ${url} did not answer within ${timeoutMs} ms`);
}

/** Resolves once the frontend answers a gRPC health check; throws if the server exits. */
async function waitUntilServing(
  connectionOptions: ConnectionOptions & { address: string },
  timeoutMs: number,
  server: GuardedProcess,
): Promise<void> {
  const deadlineAtMs = Date.now() + timeoutMs;
  const address = connectionOptions.address;
  let lastError: unknown;
  while (Date.now() < deadlineAtMs) {
    if (server.exitCode() !== undefined) {
      throw new Error(`temporal-server exited before serving:\n${server.recentOutput()}`);
    }
    try {
      const connection = await Connection.connect({ ...connectionOptions, connectTimeout: 2_000 });
      try {
        await connection.healthService.check({});
        return;
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `temporal-server at ${address} did not answer within ${timeoutMs} ms (${String(lastError)}):\n` +
      server.recentOutput(),
  );
}
