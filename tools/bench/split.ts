/**
 * `npm run bench -- split`: the burst of refusals of the default mode with the API and the
 * worker as separate processes, the production shape (docs/benchmarks.md, "split"; issue 34).
 * Servers of its own (tools/bench/process-rig.ts): a Temporal dev server, a simulated cluster
 * in the bench's own process (so neither service pays for it), and this checkout's
 * `src/api/main.ts` and `src/worker/main.ts` on one SQLite store.
 *
 * Each round: `atOnce` refused creates at once (disk 300 on fresh templates whose rootfs is
 * 451 MiB), each followed by long-poll until `failed` is visible; measured from the refusal event
 * (the bench's own events watch), as the default mode's row. Then, until every refused pod is
 * deleted (compensation done): the CPU time each process used for the round (user + system,
 * /proc/<pid>/stat), less its idle rate over 3 s measured before the round for as long, per
 * create.
 */
import { loadavg } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { podNameFor } from '../../src/kubernetes/pod-spec.js';
import { ProcessRig } from './process-rig.js';
import {
  asyncCreate,
  atOnce,
  cpuMs,
  expectRefused,
  FreshTemplates,
  isDone,
  outcomeVisible,
  problems,
  sleep,
  summary,
  watchRefusals,
  type Summary,
} from './support.js';
import { waitUntil } from '../wait-until.js';

const NAMESPACE = 'sandboxes';
/** The simulated node's answer delay, as the default mode's stack (SIMULATED_NODE_DELAY_MS). */
const NODE_DELAY_MS = 150;
/** Refusals per round and rounds (`--quick`: a trial). */
const SIZES = { full: { atOnce: 100, rounds: 3 }, quick: { atOnce: 20, rounds: 2 } } as const;
const PROCESSES = ['src/api/main.ts', 'src/worker/main.ts'] as const;

/** What `split` reports. */
interface SplitFigures {
  at_once: number;
  rounds: number;
  /** Refusal event -> `failed` visible, every round's creates together. */
  refusal_to_failed_ms: Summary;
  /** CPU per refused create of each round, ms, per process and both together. */
  cpu_ms_per_create: Record<'api' | 'worker' | 'both', number[]>;
  load_average: { before: number[]; after: number[] };
}

/**
 * Runs the split mode.
 * @returns {@link SplitFigures}; failed checks go to `problems`
 */
export async function measureSplitProcesses(quick: boolean): Promise<Record<string, unknown>> {
  const { atOnce: n, rounds } = quick ? SIZES.quick : SIZES.full;
  const loadBefore = loadavg().map((v) => Math.round(v * 10) / 10);
  const fresh = new FreshTemplates(n * rounds + 5);
  const rootfsMib = Object.fromEntries(
    Object.keys(JSON.parse(fresh.catalog()) as Record<string, unknown>).map((name) => [name, 451]),
  );
  const rig = await ProcessRig.start({
    label: 'split',
    cluster: { startupDelayMs: NODE_DELAY_MS, rootfsMib },
    namespace: NAMESPACE,
    env: { SANDBOX_TEMPLATES: fresh.catalog(), OTEL_TRACES_EXPORTER: 'none' },
  });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(rig.cluster.kubeconfigYaml(NAMESPACE));
  const watch = await watchRefusals(kubeConfig);
  const refused = async (settled = outcomeVisible): Promise<number> => {
    try {
      const { atMs, op } = await asyncCreate(
        rig.base,
        { diskMib: 300, template: fresh.take() },
        settled,
        { longPoll: true },
      );
      expectRefused(op);
      const seenAtMs = watch.seenAtMs(podNameFor(op.sandbox_id, 1));
      return seenAtMs === undefined ? NaN : atMs - seenAtMs;
    } catch (err) {
      problems.push(`split: refused create: ${String(err)}`);
      return NaN;
    }
  };
  const cpu = () => PROCESSES.map((entry) => cpuMs(rig.pidOf(entry)));
  const pods = async () => {
    const response = await fetch(`${rig.cluster.url}/api/v1/namespaces/${NAMESPACE}/pods`);
    return ((await response.json()) as { items: unknown[] }).items.length;
  };
  try {
    console.log(
      `split: servers up (api pid ${rig.pidOf('src/api/main.ts')}, worker pid ${rig.pidOf('src/worker/main.ts')}); warming up`,
    );
    for (let i = 0; i < 3; i++) await refused(isDone);
    const latencies: number[] = [];
    const perCreate: SplitFigures['cpu_ms_per_create'] = { api: [], worker: [], both: [] };
    for (let round = 0; round < rounds; round++) {
      const idleFromMs = performance.now();
      const idleFrom = cpu();
      await sleep(3_000);
      const idleRate = cpu().map((ms, i) => (ms - idleFrom[i]!) / (performance.now() - idleFromMs));
      const fromMs = performance.now();
      const from = cpu();
      latencies.push(...(await atOnce(n, () => refused())));
      await waitUntil(async () => (await pods()) === 0, {
        timeoutMs: 60_000,
        intervalMs: 200,
        what: 'the refused pods deleted',
      }).catch((err: unknown) => problems.push(`split: ${String(err)}`));
      const wallMs = performance.now() - fromMs;
      const used = cpu().map((ms, i) => (ms - from[i]! - idleRate[i]! * wallMs) / n);
      const [api = NaN, worker = NaN] = used.map((ms) => Math.round(ms * 10) / 10);
      perCreate.api.push(api);
      perCreate.worker.push(worker);
      perCreate.both.push(Math.round((api + worker) * 10) / 10);
      console.log(
        `  round ${round + 1}: ${n} at once, CPU per create api ${api} ms, worker ${worker} ms`,
      );
    }
    const figures: SplitFigures = {
      at_once: n,
      rounds,
      refusal_to_failed_ms: summary(latencies),
      cpu_ms_per_create: perCreate,
      load_average: { before: loadBefore, after: loadavg().map((v) => Math.round(v * 10) / 10) },
    };
    console.log(`\nAPI and worker as separate processes, ${n} refusals at once, ${rounds} rounds:`);
    for (const [name, value] of Object.entries(figures))
      console.log(`  ${name.padEnd(24)} ${JSON.stringify(value)}`);
    return { figures };
  } finally {
    watch.stop();
    await rig.stop();
  }
}
