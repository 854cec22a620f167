/**
 * The production shape on one machine, for the bench modes that measure it (`replace`,
 * `noisy`): a dev server and a simulated cluster of the rig's own, and one checkout's API
 * (`src/api/main.ts`) and worker (`src/worker/main.ts`) as two processes sharing a SQLite store in a
 * temporary data directory. Each process's last output is kept, so a start that fails says why.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/process/free-port.js';
import {
  SimulatedCluster,
  type SimulatedClusterOptions,
} from '../../environments/simulated-cluster/index.js';
import { startDevServer, type DevServer } from '../../environments/dev-server/dev-server.js';
import { runKept, stopChild, type Checkout, type KeptProcess } from './checkouts.js';
import { scrape } from './prometheus.js';
import { BENCH_SERVICE_ENV } from './support.js';
import { waitUntil } from '../wait-until.js';

/** What one rig runs. */
export interface ProcessRigOptions {
  /** Names the rig's data directory and its messages, e.g. `replace` or `candidate`. */
  label: string;
  /** The checkout whose API and worker run (default: this one). */
  checkout?: Checkout;
  /** The simulated cluster's options (nodes, start-up delay, rootfs sizes). */
  cluster: SimulatedClusterOptions;
  /** The namespace the sandboxes live in (the kubeconfig's). */
  namespace: string;
  /** Variables added to both processes' (e.g. SANDBOX_TEMPLATES, API_TOKENS, TENANT_LIMITS). */
  env: Record<string, string>;
  /**
   * Variables the processes must not have, even the rig's own (e.g. `TENANT_LIMITS`, for the
   * service's built-in defaults).
   */
  withoutEnv?: readonly string[];
}

/** How long a loaded machine may take to build the worker's bundle and answer, in ms. */
const READY_WITHIN_MS = 300_000;

/** A started rig. Stop it with {@link ProcessRig.stop}. */
export class ProcessRig {
  private constructor(
    readonly devServer: DevServer,
    readonly cluster: SimulatedCluster,
    readonly dataDir: string,
    readonly apiPort: number,
    readonly workerMetricsPort: number,
    private readonly children: KeptProcess[],
  ) {}

  /**
   * Starts the servers and both processes and waits until the API's /readyz answers 200 and
   * the worker's /metrics answers.
   * @throws Error naming what never got ready (with /readyz's last answer), or the process that
   *   exited with its last output; everything started is stopped first
   */
  static async start(options: ProcessRigOptions): Promise<ProcessRig> {
    const dataDir = mkdtempSync(join(tmpdir(), `durable-sandbox-bench-${options.label}-`));
    const devServer = await startDevServer({ ui: false });
    const cluster = await SimulatedCluster.start(options.cluster);
    cluster.writeKubeconfig(join(dataDir, 'kubeconfig'), options.namespace);
    const env = {
      ...BENCH_SERVICE_ENV,
      TEMPORAL_ADDRESS: devServer.address,
      TEMPORAL_TASK_QUEUE: 'sandbox-create',
      KUBECONFIG: join(dataDir, 'kubeconfig'),
      SANDBOX_NAMESPACE: options.namespace,
      DATA_DIR: dataDir,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error',
      ...options.env,
    } as Record<string, string>;
    for (const name of options.withoutEnv ?? []) delete env[name];
    const apiPort = await freePort();
    const workerMetricsPort = await freePort();
    const children = [
      runKept(options.checkout, 'src/worker/main.ts', {
        ...env,
        METRICS_PORT: String(workerMetricsPort),
      }),
      runKept(options.checkout, 'src/api/main.ts', { ...env, PORT: String(apiPort) }),
    ];
    const rig = new ProcessRig(devServer, cluster, dataDir, apiPort, workerMetricsPort, children);
    try {
      await rig.waitUntilReady(options.label);
    } catch (err) {
      await rig.stop();
      throw err;
    }
    return rig;
  }

  private async waitUntilReady(label: string): Promise<void> {
    let readyz = '(no answer)';
    await waitUntil(
      async () => {
        this.throwIfExited();
        const response = await fetch(`${this.base}/readyz`).catch(() => undefined);
        if (response) readyz = `${response.status} ${(await response.text()).slice(0, 300)}`;
        return response?.status === 200;
      },
      { timeoutMs: READY_WITHIN_MS, intervalMs: 200, what: `${label}: the API ready` },
    ).catch((err: Error) => {
      throw new Error(`${err.message}; /readyz last answered ${readyz}`);
    });
    await waitUntil(
      () =>
        this.throwIfExited() ??
        this.workerMetrics().then(
          () => true,
          () => false,
        ),
      { timeoutMs: READY_WITHIN_MS, intervalMs: 200, what: `${label}: the worker up` },
    );
  }

  /** @throws Error with its last output when the API or the worker has exited */
  throwIfExited(): undefined {
    const exited = this.children.find(({ child }) => child.exitCode !== null);
    if (exited) {
      throw new Error(
        `${exited.entry} exited (${exited.child.exitCode}); its last output:\n${exited.tail()}`,
      );
    }
    return undefined;
  }

  /** The pid of the process running `entry` (`src/api/main.ts` or `src/worker/main.ts`), -1 when none. */
  pidOf(entry: 'src/api/main.ts' | 'src/worker/main.ts'): number {
    return this.children.find((kept) => kept.entry === entry)?.child.pid ?? -1;
  }

  /** The API's base URL, e.g. `http://127.0.0.1:41234`. */
  get base(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  /** The worker's Prometheus metrics, scraped now. */
  workerMetrics() {
    return scrape(`http://127.0.0.1:${this.workerMetricsPort}/metrics`);
  }

  /** Stops both processes (SIGTERM, waiting for each), the cluster and the dev server. */
  async stop(): Promise<void> {
    for (const { child } of this.children) await stopChild(child, 'SIGTERM');
    await this.cluster.close();
    await this.devServer.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}
