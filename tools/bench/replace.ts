/**
 * `npm run bench -- replace`: time to running after one re-placement, beside a create that
 * needed none, in the same run (docs/benchmarks.md, "replace"; docs/architecture.md,
 * "Re-placement"). Servers of its own, started here: a Temporal dev server (in memory), a
 * simulated cluster of two nodes (`node-a`, `node-b`; the scheduler binds a pod to the first node
 * its required affinity allows, and each node answers `startupDelayMs` after the bind), and this
 * checkout's `src/api/main.ts` and `src/worker/main.ts` as child processes on a SQLite store, with a
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
import { loadavg } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { podNameFor } from '../../src/kubernetes/pod-spec.js';
import { ProcessRig } from './process-rig.js';
import { sumOf } from './prometheus.js';
import {
  awaitOperation,
  isDone,
  postCreate,
  problems,
  summary,
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

/** The run's rig (tools/bench/process-rig.ts) and the replacement checks on it. */
class Rig {
  private constructor(private readonly rig: ProcessRig) {}

  static async start(): Promise<Rig> {
    return new Rig(
      await ProcessRig.start({
        label: 'replace',
        cluster: {
          nodeNames: NODES,
          startupDelayMs: NODE_DELAY_MS,
          rootfsMib: { [TEMPLATE]: 451 },
        },
        namespace: NAMESPACE,
        env: {
          SANDBOX_TEMPLATES: JSON.stringify({
            [TEMPLATE]: {
              image: 'ghcr.io/durable-sandbox/base:1',
              replace_on: ['ResourceExhausted'],
            },
          }),
        },
      }),
    );
  }

  get base(): string {
    return this.rig.base;
  }

  get cluster() {
    return this.rig.cluster;
  }

  workerMetrics() {
    return this.rig.workerMetrics();
  }

  stop(): Promise<void> {
    return this.rig.stop();
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
}
