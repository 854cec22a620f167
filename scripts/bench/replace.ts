/**
 * `npm run bench -- replace`: time to running after one re-placement, beside a create that
 * needed none, in the same run (docs/benchmarks.md, "replace"; docs/architecture.md,
 * "Re-placement"). Servers of its own, started here: a Temporal dev server (in memory), a
 * simulated cluster of two nodes (`node-a`, `node-b`; the scheduler binds a pod to the first node
 * its required affinity allows, and each node answers `startupDelayMs` after the bind), and this
 * checkout's `api/main.ts` and `worker/main.ts` as child processes on a SQLite store, with a
 * template `spread` whose `replace_on` is `["ResourceExhausted"]`.
 *
 * Creates run one at a time, alternating: a *plain* create (no node refuses: running on node-a)
 * and a *replaced* one (node-a refuses with `[space-err=ResourceExhausted]`: placement 1 is
 * refused, its pod deleted by uid, placement 2 runs on node-b). Each is `POST /v1/sandboxes`
 * (disk 2048) and then the long-poll `GET /v1/operations/{id}?wait=30s` until it is done;
 * measured: POST -> `succeeded`, and for the replaced ones also the refusal event (the bench's own
 * events watch) -> `succeeded`. Every answer is checked (status, pod name and node,
 * `details.placements`), and at the end the worker's `durable_sandbox_replacements_total
 * {template="spread",code="ResourceExhausted"}` must equal the number of replaced creates.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { freePort } from '../../config/free-port.js';
import { podNameFor } from '../../kubernetes/pod-spec.js';
import { SimulatedCluster } from '../../environments/simulated-cluster/index.js';
import { startDevServer, type DevServer } from '../dev-server.js';
import { stopChild } from './checkouts.js';
import { scrape, sumOf } from './prometheus.js';
import {
  BENCH_SERVICE_ENV,
  awaitOperation,
  isDone,
  postCreate,
  problems,
  summary,
  until,
  watchRefusals,
  type Operation,
  type Summary,
} from './support.js';

const NAMESPACE = 'sandboxes';
const NODES = ['node-a', 'node-b'];
const TEMPLATE = 'spread';
/** The simulated node's answer delay, as the embedded stack's default (SIMULATED_NODE_DELAY_MS). */
const NODE_DELAY_MS = 300;
const FULL = 'no sandbox capacity left on the node';

/** How many creates of each kind (`--quick`: a trial). */
const ROUNDS = { full: 40, quick: 5 } as const;

/** What `replace` reports. */
interface ReplaceFigures {
  rounds: number;
  node_delay_ms: number;
  plain_post_to_running_ms: Summary;
  replaced_post_to_running_ms: Summary;
  replaced_refusal_event_to_running_ms: Summary;
  /** p50 of replaced minus p50 of plain: what one re-placement adds. */
  added_by_one_replacement_p50_ms: number;
  replacements_counted: number;
  load_average: { before: number[]; after: number[] };
}

/** One create's body on the re-placing template. */
const BODY = JSON.stringify({
  template: TEMPLATE,
  resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
});

type Done = Operation & {
  result?: { sandbox?: { pod?: { name?: string } } };
  details?: { placements?: Array<{ placement: number; node: string; code: string }> };
};

/**
 * Runs the replace mode.
 * @returns {@link ReplaceFigures}; failed checks go to `problems`
 */
export async function measureReplacement(quick: boolean): Promise<Record<string, unknown>> {
  const rounds = quick ? ROUNDS.quick : ROUNDS.full;
  const loadBefore = loadavg().map((v) => Math.round(v * 10) / 10);
  const rig = await Rig.start();
  try {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(rig.cluster.kubeconfigYaml(NAMESPACE));
    console.log(`replace: servers up; warming up (one create of each kind)`);
    await rig.create(false);
    await rig.create(true);
    const plain: number[] = [];
    const replaced: number[] = [];
    const eventToRunning: number[] = [];
    for (let round = 0; round < rounds; round++) {
      plain.push((await rig.create(false)).ms);
      // A watch per replaced create: one stream open for the whole run may be cut meanwhile.
      const refusals = await watchRefusals(kubeConfig);
      const { ms, atMs, op } = await rig.create(true).finally(() => refusals.stop());
      replaced.push(ms);
      const seenAtMs = refusals.seenAtMs(podNameFor(op.sandbox_id, 1));
      if (seenAtMs === undefined) problems.push(`no refusal event seen for ${op.id}`);
      else eventToRunning.push(atMs - seenAtMs);
    }
    const counted = sumOf(await rig.workerMetrics(), 'durable_sandbox_replacements_total', {
      template: TEMPLATE,
      code: 'ResourceExhausted',
    });
    // The warm-up's replaced create counts too.
    if (counted !== rounds + 1)
      problems.push(`durable_sandbox_replacements_total is ${counted}, expected ${rounds + 1}`);
    const figures: ReplaceFigures = {
      rounds,
      node_delay_ms: NODE_DELAY_MS,
      plain_post_to_running_ms: summary(plain),
      replaced_post_to_running_ms: summary(replaced),
      replaced_refusal_event_to_running_ms: summary(eventToRunning),
      added_by_one_replacement_p50_ms:
        Math.round((summary(replaced).p50 - summary(plain).p50) * 10) / 10,
      replacements_counted: counted,
      load_average: { before: loadBefore, after: loadavg().map((v) => Math.round(v * 10) / 10) },
    };
    console.log(`\ntime to running, ${rounds} sequential creates of each kind, alternating (ms):`);
    for (const [name, value] of Object.entries(figures))
      console.log(`  ${name.padEnd(38)} ${JSON.stringify(value)}`);
    return { figures };
  } finally {
    await rig.stop();
  }
}

/** The servers and processes of the run. */
class Rig {
  private constructor(
    readonly devServer: DevServer,
    readonly cluster: SimulatedCluster,
    readonly dataDir: string,
    readonly apiPort: number,
    readonly workerMetricsPort: number,
    private readonly children: KeptProcess[],
  ) {}

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

  static async start(): Promise<Rig> {
    const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-bench-replace-'));
    const devServer = await startDevServer({ ui: false });
    const cluster = await SimulatedCluster.start({
      nodeNames: NODES,
      startupDelayMs: NODE_DELAY_MS,
      rootfsMib: { [TEMPLATE]: 451 },
    });
    cluster.writeKubeconfig(join(dataDir, 'kubeconfig'), NAMESPACE);
    const env = {
      TEMPORAL_ADDRESS: devServer.address,
      TEMPORAL_TASK_QUEUE: 'sandbox-create',
      KUBECONFIG: join(dataDir, 'kubeconfig'),
      SANDBOX_NAMESPACE: NAMESPACE,
      DATA_DIR: dataDir,
      SANDBOX_TEMPLATES: JSON.stringify({
        [TEMPLATE]: { image: 'ghcr.io/durable-sandbox/base:1', replace_on: ['ResourceExhausted'] },
      }),
      ...BENCH_SERVICE_ENV,
      LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'error',
    };
    const apiPort = await freePort();
    const workerMetricsPort = await freePort();
    const children = [
      runKept('worker/main.ts', { ...env, METRICS_PORT: String(workerMetricsPort) }),
      runKept('api/main.ts', { ...env, PORT: String(apiPort) }),
    ];
    const rig = new Rig(devServer, cluster, dataDir, apiPort, workerMetricsPort, children);
    try {
      // A loaded machine may take minutes to build the worker's bundle and answer /readyz.
      let readyz = '(no answer)';
      await until(
        async () => {
          rig.throwIfExited();
          const response = await fetch(`${rig.base}/readyz`).catch(() => undefined);
          if (response) readyz = `${response.status} ${(await response.text()).slice(0, 300)}`;
          return response?.status === 200;
        },
        300_000,
        'the API ready',
      ).catch((err: Error) => {
        throw new Error(`${err.message}; /readyz last answered ${readyz}`);
      });
      await until(
        () =>
          rig.throwIfExited() ??
          rig.workerMetrics().then(
            () => true,
            () => false,
          ),
        300_000,
        'the worker up',
      );
    } catch (err) {
      await rig.stop();
      throw err;
    }
    return rig;
  }

  get base(): string {
    return `http://127.0.0.1:${this.apiPort}`;
  }

  workerMetrics() {
    return scrape(`http://127.0.0.1:${this.workerMetricsPort}/metrics`);
  }

  /**
   * One create, node-a refusing it (`replaced`) or not, read by long-poll until done; checks
   * that it ran on the node and placement it should have, with the placements it should show.
   * @returns ms from the POST to done, the instant it was seen done (performance.now()), the
   *   operation
   */
  async create(replaced: boolean): Promise<{ ms: number; atMs: number; op: Done }> {
    this.cluster.faults.refuseOnNode('node-a', replaced ? 'ResourceExhausted' : null, FULL);
    const startedAtMs = performance.now();
    const response = await postCreate(this.base, BODY);
    if (response.status !== 202)
      throw new Error(`POST answered ${response.status}: ${await response.text()}`);
    const accepted = (await response.json()) as Operation;
    const op = (await awaitOperation(this.base, accepted, isDone, { longPoll: true })) as Done;
    const atMs = performance.now();
    const podName = podNameFor(op.sandbox_id, 1, replaced ? 2 : 1);
    const placements = (op.details?.placements ?? []).map((p) => `${p.node}:${p.code}`);
    const expected = replaced ? ['node-a:ResourceExhausted'] : [];
    if (
      op.status !== 'succeeded' ||
      op.result?.sandbox?.pod?.name !== podName ||
      JSON.stringify(placements) !== JSON.stringify(expected)
    ) {
      problems.push(
        `${replaced ? 'replaced' : 'plain'} create ${op.id} ended ${op.status} ` +
          `${JSON.stringify(op.error)} on pod ${op.result?.sandbox?.pod?.name} with placements ` +
          `${JSON.stringify(placements)}; expected succeeded on ${podName} with ${JSON.stringify(expected)}`,
      );
    }
    const node = (await this.podNode(podName)) ?? '(none)';
    const expectedNode = replaced ? 'node-b' : 'node-a';
    if (node !== expectedNode) problems.push(`pod ${podName} runs on ${node}, not ${expectedNode}`);
    return { ms: atMs - startedAtMs, atMs, op };
  }

  private async podNode(podName: string): Promise<string | undefined> {
    const response = await fetch(
      `${this.cluster.url}/api/v1/namespaces/${NAMESPACE}/pods/${podName}`,
    );
    if (response.status !== 200) return undefined;
    return ((await response.json()) as { spec?: { nodeName?: string } }).spec?.nodeName;
  }

  async stop(): Promise<void> {
    for (const { child } of this.children) await stopChild(child, 'SIGTERM');
    await this.cluster.close();
    await this.devServer.stop();
    rmSync(this.dataDir, { recursive: true, force: true });
  }
}

/** A child process of this checkout whose last 8 KiB of output (stdout and stderr) are kept. */
interface KeptProcess {
  entry: string;
  child: ChildProcess;
  tail(): string;
}

/** Runs `entry` of this checkout with tsx, `env` added; its output is kept, not printed. */
function runKept(entry: string, env: Record<string, string>): KeptProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8_192));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { entry, child, tail: () => output };
}
