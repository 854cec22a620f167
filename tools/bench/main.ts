/**
 * `npm run bench [-- <mode>] [--quick]`: the benchmark's entry point (docs/benchmarks.md).
 * Modes:
 *
 *   - (none): the outcome benchmark (tools/bench/outcomes.ts), the CLI timing
 *     (tools/bench/cli-timing.ts) and the stack rows of issue 18's goals for the baseline and
 *     the candidate (tools/bench/open-loop.ts) -> bench-results/bench-<time>.json;
 *   - `real` (or `--real`): refusal latency, simulated cluster beside the real apiserver tier
 *     (tools/bench/real.ts) -> bench-results/bench-real-<time>.json;
 *   - `floors`: the refusal before 202 (tools/bench/floors.ts)
 *     -> bench-results/bench-floors-<time>.json;
 *   - `waits` (or `--waits`): what waiting creates cost, baseline beside candidate
 *     (tools/bench/waits.ts) -> bench-results/bench-waits-<time>.json;
 *   - `goals`: `waits` and the stack rows in one run, printed as issue 18's "Done when" table
 *     (tools/bench/goals.ts) -> bench-results/bench-goals-<time>.json;
 *   - `notify`: what the operation notifier's pg_notify costs PostgreSQL (tools/bench/notify.ts)
 *     -> bench-results/bench-notify-<time>.json;
 *   - `replace`: time to running after one re-placement beside a create that needed none
 *     (tools/bench/replace.ts) -> bench-results/bench-replace-<time>.json;
 *   - `topology`: the outcome benchmark on the embedded stack and on the production topology,
 *     and `notify` on the topology's PostgreSQL (tools/bench/topology.ts)
 *     -> bench-results/bench-topology-<time>.json;
 *   - `noisy`: one tenant floods creates while another makes synchronous creates, baseline
 *     beside candidate (tools/bench/noisy.ts) -> bench-results/bench-noisy-<time>.json;
 *   - `split`: the burst of refusals with the API and the worker as separate processes, CPU per
 *     create of each (tools/bench/split.ts) -> bench-results/bench-split-<time>.json;
 *   - `shapes`: what each element of a refused create's Temporal shape costs in CPU, every step
 *     a no-op (tools/bench/shapes.ts) -> bench-results/bench-shapes-<time>.json;
 *   - `expiry`: lateness of expiring sandboxes (tools/bench/expiry.ts);
 *   - `pool`: a warm pool's claim beside a cold create and the one-activity floor, one at a time
 *     and at 50/s (tools/bench/pool.ts) -> bench-results/bench-pool-<time>.json;
 *   - `claims`: the highest rate of warm claims held with p99 <= 1 s beside the rate the
 *     claim's no-op shape holds, baseline beside candidate (tools/bench/claims.ts)
 *     -> bench-results/bench-claims-<time>.json;
 *   - `list`: a page of `GET /v1/sandboxes` by label selector beside the unfiltered page, over
 *     100,000 sandboxes of one tenant, on SQLite and PostgreSQL (tools/bench/list.ts)
 *     -> bench-results/bench-list-<time>.json;
 *   - `retention`: the store's creates/s with and without a purge of a large backlog running,
 *     on SQLite and PostgreSQL (tools/bench/retention.ts)
 *     -> bench-results/bench-retention-<time>.json;
 *   - `cpu`: CPU per operation (cold create, refused create, warm claim, delete, expiry) of the
 *     stack process, the API, the worker and the Temporal server, beside the no-op workflow of
 *     each operation's shape, baseline beside candidate (tools/bench/cpu.ts)
 *     -> bench-results/bench-cpu-<time>.json.
 *
 * `--quick` runs smaller counts (a trial, not the figures). The baseline is the
 * checkout at BASELINE_DIR, the candidate the one at CANDIDATE_DIR (default: this one).
 * Each mode checks its answers; the process exits 1 when a check failed or the mode threw.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { checkoutsOfRun, type Checkout } from './checkouts.js';
import { measureCliTiming } from './cli-timing.js';
import { measureFloors } from './floors.js';
import { estimateRun, printEstimate } from './estimate.js';
import {
  printGoals,
  STACK_ROW_IDS,
  unmeasuredRows,
  WAITS_ROW_IDS,
  type GoalFigures,
} from './goals.js';
import { measureNoisyNeighbour } from './noisy.js';
import { measureNotify } from './notify.js';
import { ladderCountsOf, measureStackFigures } from './open-loop.js';
import { measureOutcomes } from './outcomes.js';
import { compareRefusalLatency } from './real.js';
import { measureReplacement } from './replace.js';
import { measureCpu } from './cpu.js';
import { measureShapes } from './shapes.js';
import { measureSplitProcesses } from './split.js';
import { measureExpiry } from './expiry.js';
import { measureList } from './list.js';
import { measurePool } from './pool.js';
import { measureClaims } from './claims.js';
import { measureRetention } from './retention.js';
import { measureTopologyThroughput } from './topology.js';
import { errorText, finish, problems, writeResults } from './support.js';
import { measureWaitFigures, waitSizesOf } from './waits.js';

/** One checkout's figures, as the table takes them. */
type Labelled = { label: string; figures: GoalFigures };

/**
 * The stack rows of the goals for `checkouts` (default: every checkout of the run, baseline
 * first); `onFigures` is called after each. A checkout whose turn comes after `endAtMs` is not
 * run (its rows say so).
 */
async function stackGoals(
  quick: boolean,
  onFigures: (labelled: Labelled) => void = () => undefined,
  checkouts: Checkout[] = checkoutsOfRun(),
  endAtMs = Infinity,
) {
  const counts = ladderCountsOf(quick);
  const figures: Labelled[] = [];
  const steps: unknown[] = [];
  for (const checkout of checkouts) {
    if (Date.now() > endAtMs) {
      const why = "the run's end (BENCH_END_BY) came before this checkout's stack";
      const notRun = Object.fromEntries(STACK_ROW_IDS.map((id) => [id, why]));
      figures.push({ label: checkout.label, figures: { notRun } });
      onFigures(figures.at(-1)!);
      continue;
    }
    try {
      const measured = await measureStackFigures(checkout, counts);
      figures.push({ label: checkout.label, figures: measured.figures });
      steps.push({ checkout: checkout.label, steps: measured.steps });
    } catch (err) {
      // Its rows stay unmeasured (an error in the table); the other checkout still runs.
      problems.push(`${checkout.label}: stack rows: ${errorText(err)}`);
      figures.push({ label: checkout.label, figures: {} });
    }
    onFigures(figures.at(-1)!);
  }
  return { counts, figures, steps };
}

/** Each mode: what it measures, as the results file's fields. */
const MODES: Record<string, (quick: boolean) => Promise<Record<string, unknown>>> = {
  default: async (quick) => {
    const outcomes = await measureOutcomes(quick);
    const cli = await measureCliTiming();
    const stack = await stackGoals(quick);
    printGoals(waitSizesOf(quick), stack.figures, STACK_ROW_IDS);
    problems.push(...unmeasuredRows(waitSizesOf(quick), stack.figures, STACK_ROW_IDS));
    return { ...outcomes, cli_create_wait_refused_ms: cli, goals: stack };
  },
  real: () => compareRefusalLatency(),
  floors: () => measureFloors(),
  waits: async (quick) => {
    const waits = await measureWaitFigures(quick);
    printGoals(waits.sizes, waits.figures, WAITS_ROW_IDS);
    problems.push(...unmeasuredRows(waits.sizes, waits.figures, WAITS_ROW_IDS));
    return waits;
  },
  goals: async (quick) => {
    const startedAtMs = Date.now();
    const checkouts = checkoutsOfRun();
    const labels = checkouts.map((c) => c.label);
    const sizes = waitSizesOf(quick);
    printEstimate(estimateRun(sizes, ladderCountsOf(quick), labels), quick);
    if (Number.isFinite(sizes.endAtMs))
      console.log(`the run ends by ${new Date(sizes.endAtMs).toISOString()} (BENCH_END_BY)`);
    // The table so far after each part, so a run cut short still shows what it measured.
    const figures: Labelled[] = labels.map((label) => ({ label, figures: {} }));
    const merge = ({ label, figures: f }: Labelled) => {
      const entry = figures.find((e) => e.label === label)!;
      entry.figures = {
        ...entry.figures,
        ...f,
        notRun: { ...entry.figures.notRun, ...f.notRun },
        reached: { ...entry.figures.reached, ...f.reached },
      };
      printGoals(sizes, figures);
      writeFileSync(
        'bench-results/bench-goals-partial.json',
        `${JSON.stringify({ at: new Date().toISOString(), sizes, figures, problems }, null, 2)}\n`,
      );
    };
    mkdirSync('bench-results', { recursive: true });
    // The candidate's rows first whatever BENCH_ORDER says, the baseline's beside them, and the
    // largest fills last: a run that meets BENCH_END_BY loses those first.
    const candidate = checkouts.filter((c) => c.label === 'candidate');
    const baseline = checkouts.filter((c) => c.label === 'baseline');
    const waits = [await measureWaitFigures(quick, merge, candidate, sizes, 'small')];
    const stack = [await stackGoals(quick, merge, candidate, sizes.endAtMs)];
    if (baseline.length > 0) {
      waits.push(await measureWaitFigures(quick, merge, baseline, sizes, 'small'));
      stack.push(await stackGoals(quick, merge, baseline, sizes.endAtMs));
    }
    waits.push(await measureWaitFigures(quick, merge, checkouts, sizes, 'large'));
    console.log(`\nall figures (${Math.round((Date.now() - startedAtMs) / 60_000)} min):`);
    printGoals(sizes, figures);
    problems.push(...unmeasuredRows(sizes, figures));
    const minutes = Math.round((Date.now() - startedAtMs) / 6_000) / 10;
    console.log(`\nthe run took ${minutes} min`);
    return { waits, stack, figures, minutes };
  },
  notify: () => measureNotify(),
  replace: (quick) => measureReplacement(quick),
  topology: (quick) => measureTopologyThroughput(quick),
  noisy: (quick) => measureNoisyNeighbour(quick),
  split: (quick) => measureSplitProcesses(quick),
  shapes: (quick) => measureShapes(quick),
  expiry: (quick) => measureExpiry(quick),
  pool: (quick) => measurePool(quick),
  claims: (quick) => measureClaims(quick),
  list: (quick) => measureList(quick),
  retention: (quick) => measureRetention(quick),
  cpu: (quick) => measureCpu(quick),
};

/** The mode named by the arguments (`real`, `--real`, ...), `default` when none is. */
function modeOf(args: string[]): string {
  const named = args.map((arg) => arg.replace(/^--/, '')).filter((arg) => arg in MODES);
  if (named.length > 1) throw new Error(`one mode at a time, not ${named.join(' and ')}`);
  const unknown = args.filter((arg) => !(arg.replace(/^--/, '') in MODES) && arg !== '--quick');
  if (unknown.length > 0)
    throw new Error(
      `unknown argument ${unknown.join(' ')}; modes: real, floors, waits, goals, notify, replace, topology, noisy, split, shapes, expiry, pool, claims, list, retention, cpu`,
    );
  return named[0] ?? 'default';
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const mode = modeOf(args);
  writeResults(mode, await MODES[mode]!(args.includes('--quick')));
  finish();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
