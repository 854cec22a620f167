/**
 * The goal rows measured on the embedded stack (docs/benchmarks.md, "Goals"), for each checkout
 * of the run on a stack of its own (`scripts/start.ts` of that checkout; the simulated node
 * refuses or starts a pod 150 ms after it is created), with the Temporal floors on a worker of
 * the bench's own against that stack's dev server:
 *
 *   - `atOnce` refusals at once, none waiting: refusal event (the bench's events watch) ->
 *     long-poll GET shows `failed`; beside the one-failing-activity floor, `atOnce` at once;
 *   - open loop of mixed creates (every other one refused by the node, the others succeed):
 *     rates from a ladder, `seconds` each, until one misses; a rate is held when every create
 *     ended as expected and p95 (POST -> failed visible / succeeded) <= 2 s. The same ladder
 *     for the floor (one failing / one succeeding activity, start -> result).
 */
import { podNameFor } from '../../kubernetes/pod-spec.js';
import type { Checkout } from './checkouts.js';
import type { GoalFigures } from './goals.js';
import { openLoop, startFloors } from './outcomes.js';
import {
  asyncCreate,
  atOnce,
  expectRefused,
  isDone,
  outcomeVisible,
  problems,
  startStack,
  summary,
  watchRefusals,
  type Summary,
} from './support.js';

/** The counts of the stack figures. */
export interface LadderCounts {
  atOnce: number;
  /** Seconds each rate is held. */
  seconds: number;
  /** Rates (creates/s) tried for the product and the floor, ascending. */
  productRates: number[];
  floorRates: number[];
}

/** The counts. */
export const FULL_LADDER: LadderCounts = {
  atOnce: 100,
  seconds: 60,
  productRates: [2, 4, 6, 8, 12, 16, 24, 32],
  floorRates: [4, 8, 16, 24, 32, 48, 64],
};

/** `--quick`: a trial run. */
export const QUICK_LADDER: LadderCounts = {
  atOnce: 20,
  seconds: 10,
  productRates: [2, 4, 8],
  floorRates: [4, 8, 16],
};

/** The counts of this run: `--quick` or the full ones, with env overrides. */
export function ladderCountsOf(quick: boolean): LadderCounts {
  const base = quick ? QUICK_LADDER : FULL_LADDER;
  const list = (name: string, fallback: number[]) =>
    process.env[name] ? process.env[name]!.split(',').map(Number) : fallback;
  return {
    atOnce: Number(process.env.BENCH_AT_ONCE || base.atOnce),
    seconds: Number(process.env.BENCH_OPEN_S || base.seconds),
    productRates: list('BENCH_OPEN_RATES', base.productRates),
    floorRates: list('BENCH_FLOOR_RATES', base.floorRates),
  };
}

/** One step of a ladder. */
export interface LadderStep {
  who: 'product' | 'floor';
  ratePerS: number;
  stats: Summary;
  /** Creates that did not end as expected. */
  wrong: number;
  /** ms from the first start to the last create's end. */
  wallMs: number;
  held: boolean;
}

/** Climbs `rates` until one is not held; returns every step. */
async function ladder(
  who: LadderStep['who'],
  rates: number[],
  seconds: number,
  create: (i: number) => Promise<number>,
): Promise<LadderStep[]> {
  const steps: LadderStep[] = [];
  for (const ratePerS of rates) {
    let i = 0;
    const { runs, wallMs } = await openLoop(ratePerS, seconds, () => create(i++));
    const stats = summary(runs);
    const wrong = runs.length - stats.n;
    const held = wrong === 0 && stats.p95 <= 2_000;
    const step: LadderStep = { who, ratePerS, stats, wrong, wallMs: Math.round(wallMs), held };
    steps.push(step);
    console.log(
      `  ${who} open loop ${ratePerS}/s for ${seconds} s: ${JSON.stringify(stats)} ${held ? 'held' : 'not held'}`,
    );
    if (!held) break;
  }
  return steps;
}

/** The highest rate held (0 when none). */
function highestHeld(steps: LadderStep[]): number {
  return Math.max(0, ...steps.filter((s) => s.held).map((s) => s.ratePerS));
}

/**
 * The stack figures of one checkout.
 * @returns the goal figures (row 1 and the open loop) and the ladder steps; wrong outcomes go
 *   to `problems`
 */
export async function measureStackFigures(
  checkout: Checkout,
  counts: LadderCounts,
): Promise<{ figures: GoalFigures; steps: LadderStep[] }> {
  const refusalsNeeded =
    2 +
    counts.atOnce +
    Math.ceil((counts.productRates.reduce((a, b) => a + b, 0) * counts.seconds) / 2);
  console.log(`\n${checkout.label} stack (${checkout.dir}):`);
  const stack = await startStack({
    env: { SIMULATED_NODE_DELAY_MS: '150' },
    freshTemplates: refusalsNeeded,
    checkoutDir: checkout.dir,
  });
  const floors = await startFloors(stack.temporalAddress);
  const watch = await watchRefusals(stack.kubeConfig());
  const longPoll = { longPoll: true } as const;
  try {
    const refusedCreate = async (settled = outcomeVisible): Promise<number> => {
      try {
        const { ms, op } = await asyncCreate(
          stack.base,
          { diskMib: 300, template: stack.fresh.take() },
          settled,
          longPoll,
        );
        expectRefused(op);
        return op.status === 'failed' ? ms : NaN;
      } catch (err) {
        problems.push(`${checkout.label}: refused create: ${(err as Error).message}`);
        return NaN;
      }
    };
    // Refusal event -> failed visible (row 1).
    const eventToFailed = async (): Promise<number> => {
      try {
        const { atMs, op } = await asyncCreate(
          stack.base,
          { diskMib: 300, template: stack.fresh.take() },
          outcomeVisible,
          longPoll,
        );
        expectRefused(op);
        const seenAtMs = watch.seenAtMs(podNameFor(op.sandbox_id, 1));
        return seenAtMs === undefined ? NaN : atMs - seenAtMs;
      } catch (err) {
        problems.push(`${checkout.label}: refused create: ${(err as Error).message}`);
        return NaN;
      }
    };
    const succeededCreate = async (): Promise<number> => {
      try {
        const { ms, op } = await asyncCreate(
          stack.base,
          { diskMib: 2048, template: 'base' },
          isDone,
          longPoll,
        );
        if (op.status !== 'succeeded') {
          problems.push(`${checkout.label}: ${op.id} ended ${op.status}, expected succeeded`);
          return NaN;
        }
        return ms;
      } catch (err) {
        problems.push(`${checkout.label}: successful create: ${(err as Error).message}`);
        return NaN;
      }
    };
    // Warm-up.
    await refusedCreate(isDone);
    await succeededCreate();
    await floors.run('floorOneFailingActivity');
    await floors.run('floorOneActivity');

    const figures: GoalFigures = {};
    figures.floorAtOnce = summary(
      await atOnce(counts.atOnce, () => floors.run('floorOneFailingActivity')),
    );
    console.log(
      `  floor: one failing activity, ${counts.atOnce} at once ${JSON.stringify(figures.floorAtOnce)}`,
    );
    figures.refusalsAtOnceNoneWaiting = summary(await atOnce(counts.atOnce, eventToFailed));
    console.log(
      `  product: ${counts.atOnce} refusals at once, event -> failed ${JSON.stringify(figures.refusalsAtOnceNoneWaiting)}`,
    );
    const floorSteps = await ladder('floor', counts.floorRates, counts.seconds, (i) =>
      floors.run(i % 2 === 0 ? 'floorOneFailingActivity' : 'floorOneActivity'),
    );
    const productSteps = await ladder('product', counts.productRates, counts.seconds, (i) =>
      i % 2 === 0 ? refusedCreate() : succeededCreate(),
    );
    figures.openLoopFloorRatePerS = highestHeld(floorSteps);
    figures.openLoopRatePerS = highestHeld(productSteps);
    return { figures, steps: [...floorSteps, ...productSteps] };
  } finally {
    watch.stop();
    await floors.stop().catch(() => undefined);
    await stack.stop();
  }
}
