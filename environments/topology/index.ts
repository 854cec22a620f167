/**
 * The production topology on this machine, no containers (docs/production.md):
 *
 * - PostgreSQL: an instance of its own (environments/postgresql/instance.ts) unless
 *   `databaseUrl` is given; it holds Temporal's two databases and the sandbox store;
 * - the Temporal server tier on it (environments/temporal-tier/launcher.ts) with its UI, serving
 *   mTLS only: the API replicas and the workers connect with client certificates of the
 *   tier's CA (TEMPORAL_TLS_CLIENT_CERT_PATH and the rest, src/config/temporal-connection.ts);
 * - the real apiserver tier (etcd + kube-apiserver) with the node agent in kubelet's place;
 * - two API replicas (`src/api/main.ts`) behind a round-robin TCP load balancer, and two workers
 *   (`src/worker/main.ts`), each a process of its own, restarted when it exits (as a supervisor or
 *   Kubernetes would); worker 2 reaches kube-apiserver through a TCP proxy the fault matrix can
 *   cut, while it still reaches Temporal. The workers run as the tier's `durable-sandbox` user
 *   (deploy/rbac.yaml's Role), the APIs as `durable-sandbox-api`, which is granted nothing
 *   (least privilege, as deploy/ sets it up).
 *
 * Every server runs under the stdin guard (apiserver-tier/process.ts): nothing outlives the
 * process that started the topology, even if it is SIGKILLed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort } from '../../src/process/free-port.js';
import { startApiserverTier, type ApiserverTier } from '../apiserver-tier/launcher.js';
import { startTierNodes } from '../node-agent/tier-nodes.js';
import { startGuarded, type GuardedProcess } from '../apiserver-tier/process.js';
import type { NodeAgent } from '../node-agent/agent.js';
import { writeKubeconfigFile } from '../simulated-cluster/kubeconfig.js';
import { startPostgresInstance, type PostgresInstance } from '../postgresql/instance.js';
import { startTemporalTier, type TemporalTier } from '../temporal-tier/launcher.js';
import { startTcpProxy, type TcpProxy } from './tcp-proxy.js';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Options of {@link startTopology}; every field is optional. */
export interface TopologyOptions {
  /**
   * A PostgreSQL URL whose role may create databases: Temporal's databases and the store go
   * there. Default: an instance of this topology's own.
   */
  databaseUrl?: string;
  /** The load balancer's port (default: a free one). */
  port?: number;
  /** How long the node agent takes to give a pod its IP, in ms (default 300). */
  nodeDelayMs?: number;
  /**
   * The rootfs size of each template's image on the node, in MiB (default `{ base: 451 }`); the
   * node agent refuses a template it does not list as not present on the node.
   */
  rootfsMib?: Record<string, number>;
  /** Extra environment of the API and worker processes (e.g. API_TOKENS, LOG_LEVEL). */
  env?: Record<string, string>;
  /** Receives every process's output lines, prefixed with its name. */
  log?: (line: string) => void;
}

/** One API or worker process, restarted whenever it exits until the topology stops. */
export interface ServiceProcess {
  /** `api-1`, `api-2`, `worker-1`, `worker-2`. */
  name: string;
  /** The API's own `http://127.0.0.1:<port>` or the worker's metrics URL. */
  url: string;
  /** Process id of the Node.js process now running (not its guard). */
  pid(): number | undefined;
  /** SIGKILLs the Node.js process; its supervisor starts a new one after 500 ms. */
  kill(): void;
  /** How many times it has been started. */
  starts(): number;
}

/** A running topology. */
export interface Topology {
  /** The load balancer in front of both API replicas: `http://127.0.0.1:<port>`. */
  url: string;
  /** PostgreSQL (only when the topology started its own). */
  postgres?: PostgresInstance;
  /** The store's URL (database `durable_sandbox`). */
  storeUrl: string;
  temporal: TemporalTier;
  apiserver: ApiserverTier;
  agent: NodeAgent;
  /** The proxy between worker 2 and kube-apiserver. */
  worker2ApiserverLink: TcpProxy;
  apis: ServiceProcess[];
  workers: ServiceProcess[];
  /**
   * The workers' kubeconfig (user `durable-sandbox`), the APIs' (user `durable-sandbox-api`,
   * granted nothing) and the admin's, in the topology's folder.
   */
  kubeconfigPath: string;
  apiKubeconfigPath: string;
  adminKubeconfigPath: string;
  /** Time from start until both API replicas answered `/readyz` 200, in ms. */
  startToReadyMs: number;
  /** Stops everything started, in reverse order. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts the topology; resolves once both API replicas answer `/readyz` with 200.
 * @throws Error when a part cannot start; what was started is stopped first
 */
export async function startTopology(options: TopologyOptions = {}): Promise<Topology> {
  const startedAtMs = Date.now();
  const log = options.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-topology-'));
  const cleanups: Array<() => Promise<unknown>> = [];
  let stopping: Promise<void> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    })());
  try {
    let postgres: PostgresInstance | undefined;
    let admin: URL;
    if (options.databaseUrl) {
      admin = new URL(options.databaseUrl);
    } else {
      postgres = await startPostgresInstance({ log: (line) => log(line) });
      cleanups.push(() => postgres!.stop());
      admin = new URL(postgres.url());
    }
    const storeUrl = await storeDatabase(admin, postgres);
    const temporal = await startTemporalTier({
      database: {
        host: admin.hostname,
        port: Number(admin.port || 5432),
        user: decodeURIComponent(admin.username),
        password: decodeURIComponent(admin.password),
      },
      log,
    });
    cleanups.push(() => temporal.stop());

    const apiserver = await startApiserverTier({ namespace: 'sandboxes', log });
    cleanups.push(() => apiserver.stop());
    // The tier has no kubelet and no kube-scheduler: the node agent and the scheduler
    // stand-in take their places (node-agent/tier-nodes.ts).
    const nodes = await startTierNodes(apiserver, {
      startupDelayMs: options.nodeDelayMs ?? 300,
      rootfsMib: options.rootfsMib,
      onError: (err, what) => log(`node: ${what}: ${String(err)}`),
    });
    cleanups.push(() => nodes.stop());
    const serviceKubeconfig = apiserver.kubeconfigYaml('durable-sandbox', 'sandboxes');
    const kubeconfigPath = join(dir, 'kubeconfig');
    const adminKubeconfigPath = join(dir, 'kubeconfig-admin');
    const apiKubeconfigPath = join(dir, 'kubeconfig-api');
    writeKubeconfigFile(kubeconfigPath, serviceKubeconfig);
    writeKubeconfigFile(
      apiKubeconfigPath,
      apiserver.kubeconfigYaml('durable-sandbox-api', 'sandboxes'),
    );
    writeKubeconfigFile(adminKubeconfigPath, apiserver.kubeconfigYaml('admin', 'sandboxes'));
    const apiserverPort = Number(new URL(apiserver.url).port);
    const worker2ApiserverLink = await startTcpProxy([apiserverPort]);
    cleanups.push(() => worker2ApiserverLink.close());
    const proxiedKubeconfigPath = join(dir, 'kubeconfig-worker-2');
    writeKubeconfigFile(
      proxiedKubeconfigPath,
      serviceKubeconfig.replace(
        `server: https://127.0.0.1:${apiserverPort}`,
        `server: https://127.0.0.1:${worker2ApiserverLink.port}`,
      ),
    );
    if (readFileSync(proxiedKubeconfigPath, 'utf8') === serviceKubeconfig) {
      throw new Error('could not point worker 2 at the apiserver proxy');
    }

    const env: Record<string, string> = {
      TEMPORAL_ADDRESS: temporal.address,
      TEMPORAL_NAMESPACE: temporal.namespace,
      DATABASE_URL: storeUrl,
      KUBECONFIG: kubeconfigPath,
      SANDBOX_NAMESPACE: 'sandboxes',
      DATA_DIR: dir,
      ...(temporal.uiUrl ? { TEMPORAL_UI_URL: temporal.uiUrl } : {}),
      ...options.env,
    };
    // Each role its own client certificate, as a platform issues them.
    const apiTemporalEnv = await temporal.clientEnv('durable-sandbox-api');
    const workerTemporalEnv = await temporal.clientEnv('durable-sandbox-worker');
    const services: SupervisedService[] = [];
    cleanups.push(async () => {
      await Promise.all(services.map((service) => service.stop()));
    });
    // The load balancer reads its targets per connection: a replica that moves to another port
    // (its own was taken, superviseService) is followed.
    const apiPorts = [await freePort(), await freePort()];
    for (const [i, port] of apiPorts.entries()) {
      services.push(
        superviseService(
          `api-${i + 1}`,
          'src/api/main.ts',
          { ...apiTemporalEnv, ...env, KUBECONFIG: apiKubeconfigPath },
          log,
          { variable: 'PORT', port, path: '', moved: (next) => (apiPorts[i] = next) },
        ),
      );
    }
    for (const i of [1, 2]) {
      services.push(
        superviseService(
          `worker-${i}`,
          'src/worker/main.ts',
          {
            ...workerTemporalEnv,
            ...env,
            ...(i === 2 ? { KUBECONFIG: proxiedKubeconfigPath } : {}),
          },
          log,
          { variable: 'METRICS_PORT', port: await freePort(), path: '/metrics' },
        ),
      );
    }
    const loadBalancer = await startTcpProxy(apiPorts, options.port ?? 0);
    cleanups.push(() => loadBalancer.close());
    for (const api of services.slice(0, 2)) await waitForReady(api, services);
    writeFileSync(join(dir, 'README'), 'the production topology (environments/topology)\n');
    return {
      url: `http://127.0.0.1:${loadBalancer.port}`,
      postgres,
      storeUrl,
      temporal,
      apiserver,
      agent: nodes.agents.get(apiserver.nodeName) as NodeAgent,
      worker2ApiserverLink,
      apis: services.slice(0, 2),
      workers: services.slice(2),
      kubeconfigPath,
      apiKubeconfigPath,
      adminKubeconfigPath,
      startToReadyMs: Date.now() - startedAtMs,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The store's database: created in the topology's own instance, else the given one's. */
async function storeDatabase(admin: URL, postgres: PostgresInstance | undefined): Promise<string> {
  if (postgres) return postgres.createDatabase('durable_sandbox');
  return admin.toString();
}

interface SupervisedService extends ServiceProcess {
  stop(): Promise<void>;
  /**
   * The last output of its current run (the guard keeps 4,000 characters), or of the run before
   * while the current one has written nothing yet.
   */
  recentOutput(): string;
}

/**
 * The port a supervised service listens on: picked by {@link freePort} before the service starts,
 * so another process (a parallel test file) may take it first.
 */
interface ServicePort {
  /** The environment variable that tells the service its port. */
  variable: 'PORT' | 'METRICS_PORT';
  port: number;
  /** The path of the service's URL: `''` for an API, `/metrics` for a worker. */
  path: string;
  /** Called with the new port when the service moved (its port was taken). */
  moved?: (port: number) => void;
}

/**
 * Whether `line` is a service's failed start because `port` was taken: the startup failure
 * line of src/process/startup-failure.ts (plain, or pino's `fatal` at level 60) naming that port.
 */
export function isPortTakenLine(line: string, port: number): boolean {
  if (!line.includes(`cannot listen on port ${port}`)) return false;
  return line.includes(' failed to start: ') || line.includes('"level":60');
}

/**
 * Runs `node --import tsx <entry>` under the guard, starting it again 500 ms after it exits. A
 * run that cannot listen on its port (its startup failure `cannot listen on port <n>`: another
 * process took the port between {@link freePort} and the listen) ends (it exits by itself; the
 * supervisor kills it at that line so as not to wait) and is started again on a new free port,
 * which `url` and `listen.moved` report. Any other restart keeps the port (the load balancer
 * and the fault matrix reach a restarted replica where it was).
 */
function superviseService(
  name: string,
  entry: string,
  env: Record<string, string>,
  log: (line: string) => void,
  listen: ServicePort,
): SupervisedService {
  let current: GuardedProcess | undefined;
  let starts = 0;
  let stopped = false;
  let outputBefore = '';
  let port = listen.port;
  /** The current run found its port taken. */
  let portTaken = false;
  const nodePid = (): number | undefined => {
    if (!current) return undefined;
    try {
      const children = readFileSync(`/proc/${current.pid}/task/${current.pid}/children`, 'utf8');
      for (const pid of children.trim().split(/\s+/).map(Number)) {
        const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
        if (cmdline.includes(entry)) return pid;
      }
    } catch {
      // exited meanwhile
    }
    return undefined;
  };
  const kill = () => {
    const pid = nodePid();
    if (pid) process.kill(pid, 'SIGKILL');
  };
  const start = () => {
    starts += 1;
    portTaken = false;
    // The guard runs a copy of this process's environment plus the service's settings.
    const guarded = startGuarded(
      name,
      'env',
      [
        ...Object.entries({ ...env, [listen.variable]: String(port) }).map(([k, v]) => `${k}=${v}`),
        process.execPath,
        '--import',
        'tsx',
        entry,
      ],
      (line) => {
        log(`${name}: ${line}`);
        // Its startup failure (src/process/startup-failure.ts, listenStep), as the failed start's own
        // line says it (plain `… failed to start: …`, or pino's `fatal`), never a log line that
        // merely quotes it. The run exits by itself 0.5 s later (exitAfterStartupFailure); the
        // kill only saves that wait, and ends a run that would not.
        if (!portTaken && isPortTakenLine(line, port)) {
          portTaken = true;
          kill();
        }
      },
      REPO_ROOT,
    );
    current = guarded;
    void guarded.exited.then(async () => {
      outputBefore = guarded.recentOutput() || outputBefore;
      if (stopped || current !== guarded) return;
      if (portTaken) {
        port = await freePort();
        log(`${name}: its port was taken by another process; moving to ${port}`);
        listen.moved?.(port);
      }
      log(`${name}: exited; starting it again`);
      setTimeout(() => !stopped && start(), 500);
    });
  };
  start();
  return {
    name,
    get url() {
      return `http://127.0.0.1:${port}${listen.path}`;
    },
    pid: nodePid,
    kill,
    starts: () => starts,
    recentOutput: () => current?.recentOutput() || outputBefore,
    async stop() {
      stopped = true;
      await current?.stop(30_000);
    },
  };
}

/** A service that has started this often before the topology is ready fails at start. */
const STARTS_BEFORE_GIVING_UP = 4;

/**
 * Polls the API's `<url>/readyz` until it answers 200 (the API checks Temporal, the store, the
 * cluster). The URL is read at each poll: an API whose port was taken moves to another
 * (superviseService), and a foreign answer there (another process's 404) lasts only until it has.
 * @throws Error after 180 s, or at once when a service has started
 *   {@link STARTS_BEFORE_GIVING_UP} times (it exits at start: a configuration error), with its
 *   last lines of output
 */
async function waitForReady(api: SupervisedService, services: SupervisedService[]): Promise<void> {
  const deadlineAtMs = Date.now() + 180_000;
  let last = '';
  let url = api.url;
  while (Date.now() < deadlineAtMs) {
    url = api.url;
    const failing = services.find((service) => service.starts() >= STARTS_BEFORE_GIVING_UP);
    if (failing) {
      throw new Error(
        `${failing.name} exited ${failing.starts() - 1} times before the topology was ready; ` +
          `its last output:\n${failing.recentOutput()}`,
      );
    }
    const answer = await fetch(`${url}/readyz`).then(
      async (response) => `${response.status} ${await response.text()}`,
      (err: Error) => err.message,
    );
    if (answer.startsWith('200')) return;
    last = answer;
    await new Promise((resolve) => setTimeout(resolve, 500));
  }
  throw new Error(
    `${url}/readyz did not answer 200 within 180 s (last: ${last.slice(0, 400)}); ` +
      `services: ${services.map((s) => `${s.name} started ${s.starts()}×`).join(', ')}`,
  );
}
