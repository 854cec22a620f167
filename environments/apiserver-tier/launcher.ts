/**
 * Starts and stops the real apiserver tier: an etcd and a kube-apiserver on free loopback ports,
 * with a temporary data directory, the serving certificate kube-apiserver generates for itself,
 * a static token file (users below), `--authorization-mode=Node,RBAC` and admission including
 * LimitRanger, ServiceAccount, PodSecurity, NodeRestriction and ResourceQuota. Once `/readyz`
 * answers it prepares the `sandboxes` namespace (see {@link ApiserverTier.prepareNamespace}).
 *
 * Users of the token file:
 * - `admin` (group `system:masters`): set-up and tests;
 * - `durable-sandbox`: the service's worker; only the Role of deploy/rbac.yaml is bound to it;
 * - `durable-sandbox-api`: the service's API; bound to nothing, as deploy/ binds its account
 *   (it only asks who it is: src/kubernetes/cluster-check.ts);
 * - `system:node:<nodeName>` (group `system:nodes`), one per node: the node agents as kubelets,
 *   authorized by the Node authorizer and NodeRestriction exactly like a kubelet;
 * - `system:kube-scheduler`: the node agent's binding step, authorized by the bootstrap
 *   `system:kube-scheduler` ClusterRole.
 *
 * Both processes run under the dev server's stdin guard (apiserver-tier/process.ts): they die
 * with their parent, even on SIGKILL.
 */
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { freePort } from '../../src/process/free-port.js';
import { ETCD, KUBE_APISERVER, locateBinary } from './binaries.js';
import { renderTierKubeconfig } from './kubeconfig.js';
import { prepareNamespace, type NamespaceOptions } from './namespace.js';
import { startGuarded, type GuardedProcess } from './process.js';

/** Options of {@link startApiserverTier}; every field is optional. */
export interface ApiserverTierOptions {
  /** Namespace prepared at start (default `sandboxes`); null prepares none. */
  namespace?: string | null;
  /** The node agent's node name, for its `system:node:<name>` token (default `agent-node-1`). */
  nodeName?: string;
  /**
   * Several nodes: one `system:node:<name>` token each (default `[nodeName]`). The first is
   * `nodeName` and user `node`; each is user `node:<name>`.
   */
  nodeNames?: string[];
  /** Keep etcd's writes durable (fsync). Default false: the tier is thrown away at stop. */
  fsync?: boolean;
  /** How long to wait for `/readyz`, in ms (default 120000: a loaded 2-core box is slow). */
  startTimeoutMs?: number;
  /** Receives each line etcd and kube-apiserver write (default: discarded). */
  log?: (line: string) => void;
}

/**
 * Who a kubeconfig authenticates as: `node` is the first node's kubelet, `node:<name>` any
 * node's.
 */
export type TierUser =
  'admin' | 'durable-sandbox' | 'durable-sandbox-api' | 'node' | 'scheduler' | `node:${string}`;

/** A running tier. */
export interface ApiserverTier {
  /** `https://127.0.0.1:<port>` */
  url: string;
  /** PEM of the CA that signed the serving certificate. */
  caPem: string;
  /** The (first) node agent's node name. */
  nodeName: string;
  /** Every node's name, the first being `nodeName`. */
  nodeNames: string[];
  /** The temporary directory holding etcd's data, certificates and the token file. */
  dir: string;
  /** Process ids of the guards of etcd and kube-apiserver. */
  pids: { etcd: number; kubeApiserver: number };
  /** Time from start to `/readyz` answering 200, in ms (binaries already built). */
  startToReadyMs: number;
  /** A self-contained kubeconfig (YAML) for `user`, its context's namespace set to `namespace`. */
  kubeconfigYaml(user: TierUser, namespace?: string): string;
  /** A KubeConfig for `user` (see kubeconfigYaml). */
  kubeConfig(user: TierUser, namespace?: string): KubeConfig;
  /** Creates and prepares a namespace for the service (see apiserver-tier/namespace.ts). */
  prepareNamespace(name: string, options?: NamespaceOptions): Promise<void>;
  /**
   * Stops kube-apiserver (SIGTERM) and starts it again on the same port, etcd and certificates;
   * resolves once `/readyz` answers 200. `pids.kubeApiserver` keeps the first process's id.
   */
  restartApiserver(): Promise<void>;
  /** Stops kube-apiserver, then etcd, and removes the directory. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Starts etcd and kube-apiserver and resolves once `/readyz` answers 200 and the namespace is
 * prepared.
 * @throws Error when a binary cannot be found or built, when a process exits early, or when
 *   `/readyz` does not answer 200 within `startTimeoutMs`; everything started is stopped first.
 */
export async function startApiserverTier(
  options: ApiserverTierOptions = {},
): Promise<ApiserverTier> {
  const etcdBinary = await locateBinary(ETCD);
  const apiserverBinary = await locateBinary(KUBE_APISERVER);
  const startedAtMs = Date.now();
  const nodeNames = options.nodeNames ?? [options.nodeName ?? 'agent-node-1'];
  const nodeName = nodeNames[0];
  if (nodeName === undefined || new Set(nodeNames).size !== nodeNames.length) {
    throw new Error('nodeNames must name at least one node, each once');
  }
  const log = options.log ?? (() => {});
  const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-apiserver-'));
  const processes: GuardedProcess[] = [];
  const stopAll = async () => {
    for (const running of [...processes].reverse()) await running.stop();
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    const [clientPort, peerPort, securePort] = await distinctFreePorts(3);
    const etcdUrl = `http://127.0.0.1:${clientPort}`;
    const peerUrl = `http://127.0.0.1:${peerPort}`;
    const etcd = startGuarded(
      'etcd',
      etcdBinary,
      [
        '--name=tier',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=${peerUrl}`,
        `--initial-advertise-peer-urls=${peerUrl}`,
        `--initial-cluster=tier=${peerUrl}`,
        '--log-level=warn',
        ...(options.fsync ? [] : ['--unsafe-no-fsync']),
      ],
      (line) => log(`etcd: ${line}`),
    );
    processes.push(etcd);

    const tokens = new Map<string, string>([
      ['admin', randomToken()],
      ['durable-sandbox', randomToken()],
      ['durable-sandbox-api', randomToken()],
      ['scheduler', randomToken()],
      ...nodeNames.map((name) => [`node:${name}`, randomToken()] as [string, string]),
    ]);
    const tokenOf = (user: TierUser): string => {
      const token = tokens.get(user === 'node' ? `node:${nodeName}` : user);
      if (token === undefined) throw new Error(`the tier has no user ${user}`);
      return token;
    };
    const userName = (user: TierUser): string => {
      if (user === 'node') return `system:node:${nodeName}`;
      return user.startsWith('node:') ? `system:node:${user.slice('node:'.length)}` : user;
    };
    writeFileSync(
      join(dir, 'tokens.csv'),
      [
        `${tokenOf('admin')},admin,admin,"system:masters"`,
        `${tokenOf('durable-sandbox')},durable-sandbox,durable-sandbox`,
        `${tokenOf('durable-sandbox-api')},durable-sandbox-api,durable-sandbox-api`,
        ...nodeNames.map((name) => {
          const user = userName(`node:${name}`);
          return `${tokenOf(`node:${name}`)},${user},${user},"system:nodes"`;
        }),
        `${tokenOf('scheduler')},system:kube-scheduler,system:kube-scheduler`,
        '',
      ].join('\n'),
      { mode: 0o600 },
    );
    // The service-account token signer: kube-apiserver refuses to start without one.
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    const signingKey = join(dir, 'service-account.key');
    writeFileSync(signingKey, privateKey.export({ type: 'pkcs8', format: 'pem' }), {
      mode: 0o600,
    });
    const certDir = join(dir, 'certs');
    mkdirSync(certDir);

    const apiserverArgs = [
      `--etcd-servers=${etcdUrl}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${securePort}`,
      // No --tls-cert-file: kube-apiserver generates a CA and a serving certificate here.
      `--cert-dir=${certDir}`,
      `--token-auth-file=${join(dir, 'tokens.csv')}`,
      '--authorization-mode=Node,RBAC',
      '--enable-admission-plugins=NamespaceLifecycle,LimitRanger,ServiceAccount,PodSecurity,NodeRestriction,ResourceQuota',
      '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${signingKey}`,
      `--service-account-signing-key-file=${signingKey}`,
      '--service-cluster-ip-range=10.96.0.0/16',
      // The `kubernetes` Service's endpoints would be 127.0.0.1, which validation refuses.
      '--endpoint-reconciler-type=none',
      '--profiling=false',
    ];
    const startApiserver = () =>
      startGuarded('kube-apiserver', apiserverBinary, apiserverArgs, (line) =>
        log(`kube-apiserver: ${line}`),
      );
    let apiserver = startApiserver();
    processes.push(apiserver);

    const url = `https://127.0.0.1:${securePort}`;
    const caPem = await waitUntilReady({
      url,
      certFile: join(certDir, 'apiserver.crt'),
      token: tokenOf('admin'),
      timeoutMs: options.startTimeoutMs ?? 120_000,
      processes: { etcd, 'kube-apiserver': apiserver },
    });
    const startToReadyMs = Date.now() - startedAtMs;

    const kubeconfigYaml = (user: TierUser, namespace = 'default') =>
      renderTierKubeconfig({
        server: url,
        caPem,
        user: userName(user),
        token: tokenOf(user),
        namespace,
      });
    const kubeConfig = (user: TierUser, namespace?: string) => {
      const config = new KubeConfig();
      config.loadFromString(kubeconfigYaml(user, namespace));
      return config;
    };
    let stopping: Promise<void> | undefined;
    const tier: ApiserverTier = {
      url,
      caPem,
      nodeName,
      nodeNames,
      dir,
      pids: { etcd: etcd.pid, kubeApiserver: apiserver.pid },
      startToReadyMs,
      kubeconfigYaml,
      kubeConfig,
      prepareNamespace: (name, namespaceOptions) =>
        prepareNamespace(kubeConfig('admin'), name, namespaceOptions),
      async restartApiserver() {
        await apiserver.stop();
        const next = startApiserver();
        processes[processes.indexOf(apiserver)] = next;
        apiserver = next;
        await waitUntilReady({
          url,
          certFile: join(certDir, 'apiserver.crt'),
          token: tokens.get('admin') as string,
          timeoutMs: options.startTimeoutMs ?? 120_000,
          processes: { etcd, 'kube-apiserver': next },
        });
      },
      stop: () => (stopping ??= stopAll()),
    };
    const namespace = options.namespace === undefined ? 'sandboxes' : options.namespace;
    if (namespace !== null) await tier.prepareNamespace(namespace);
    return tier;
  } catch (err) {
    await stopAll();
    throw err;
  }
}

function randomToken(): string {
  return randomBytes(24).toString('hex');
}

async function distinctFreePorts(count: number): Promise<number[]> {
  const ports = new Set<number>();
  while (ports.size < count) ports.add(await freePort());
  return [...ports];
}

interface ReadinessProbe {
  url: string;
  certFile: string;
  token: string;
  timeoutMs: number;
  processes: Record<string, GuardedProcess>;
}

/**
 * Polls `/readyz` every 200 ms until it answers 200; returns the CA PEM (the generated
 * certificate file holds the serving certificate and the CA that signed it).
 */
async function waitUntilReady(probe: ReadinessProbe): Promise<string> {
  const deadline = Date.now() + probe.timeoutMs;
  let last = 'no answer yet';
  for (;;) {
    for (const [name, running] of Object.entries(probe.processes)) {
      const code = running.exitCode();
      if (code !== undefined) {
        throw new Error(
          `${name} exited (code ${code}) before the apiserver was ready:\n${running.recentOutput()}`,
        );
      }
    }
    if (Date.now() > deadline) {
      throw new Error(
        `kube-apiserver at ${probe.url} was not ready within ${probe.timeoutMs} ms (${last}):\n` +
          probe.processes['kube-apiserver']?.recentOutput(),
      );
    }
    let caPem: string | undefined;
    try {
      caPem = readFileSync(probe.certFile, 'utf8');
    } catch {
      // not generated yet
    }
    if (caPem) {
      const answer = await getReadyz(probe.url, caPem, probe.token);
      if (answer.status === 200) return caPem;
      last = `/readyz answered ${answer.status}: ${answer.body.slice(0, 300)}`;
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function getReadyz(
  url: string,
  caPem: string,
  token: string,
): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request(
      `${url}/readyz`,
      { ca: caPem, headers: { authorization: `Bearer ${token}` }, timeout: 2_000 },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => (body += chunk.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (err) => resolve({ status: 0, body: err.message }));
    req.end();
  });
}
