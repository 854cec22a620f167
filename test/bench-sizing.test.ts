/**
 * The bench's pure parts besides the goal table: the sizes of a run (tools/bench/waits.ts,
 * tools/bench/open-loop.ts), the percentile it reports (tools/bench/support.ts), when an
 * open-loop rate is held and how the ladder finds the highest one (tools/bench/open-loop.ts),
 * and the run's time estimate (tools/bench/estimate.ts). No servers.
 */
import { describe, expect, it } from 'vitest';
import { estimateRun } from '../tools/bench/estimate.js';
import {
  FULL_LADDER,
  highestHeldRate,
  isHeld,
  ladderCountsOf,
  lateAllowed,
  QUICK_LADDER,
  runStep,
  type LadderStep,
} from '../tools/bench/open-loop.js';
import { summary } from '../tools/bench/support.js';
import { FULL_WAITS, QUICK_WAITS, waitSizesOf } from '../tools/bench/waits.js';

describe('the sizes of a run', () => {
  it('are the issue sizes in a full run and smaller with --quick', () => {
    expect(waitSizesOf(false, {})).toMatchObject({
      many: 1000,
      crowd: 3000,
      max: 10000,
      atOnce: 100,
    });
    expect(waitSizesOf(true, {})).toEqual(QUICK_WAITS);
    expect(QUICK_WAITS.max).toBeLessThan(FULL_WAITS.max);
    expect(ladderCountsOf(false, {})).toEqual(FULL_LADDER);
    expect(ladderCountsOf(false, {}).seconds).toBe(60);
    expect(ladderCountsOf(true, {})).toEqual(QUICK_LADDER);
  });

  it('take each size from its variable, 0 included', () => {
    const sizes = waitSizesOf(false, { BENCH_WAITS_MAX: '0', BENCH_WAITS_MANY: '200' });
    expect(sizes.max).toBe(0);
    expect(sizes.many).toBe(200);
    expect(sizes.crowd).toBe(3000);
    const ladder = ladderCountsOf(false, { BENCH_OPEN_RATES: '1,3', BENCH_OPEN_S: '10' });
    expect(ladder.productRates).toEqual([1, 3]);
    // A probe is never longer than the hold.
    expect(ladder.probeSeconds).toBe(10);
  });
});

describe('the percentile', () => {
  it('is the value at rank ceil(q n), leaving out runs that never settled', () => {
    const values = Array.from({ length: 100 }, (_, i) => i + 1);
    expect(summary(values)).toEqual({ n: 100, p50: 50, p95: 95, max: 100 });
    expect(summary([3, NaN, 1, 2])).toEqual({ n: 3, p50: 2, p95: 3, max: 3 });
    expect(summary([]).n).toBe(0);
    expect(summary([]).p95).toBeNaN();
  });
});

describe('a held rate', () => {
  it('allows exactly as many late runs as p95 <= 2 s leaves room for', () => {
    for (const n of [1, 19, 20, 21, 120, 240, 3840]) {
      const allowed = lateAllowed(n);
      const fast = Array.from({ length: n - allowed }, () => 100);
      expect(summary([...fast, ...Array.from({ length: allowed }, () => 5_000)]).p95).toBe(100);
      const oneMore = [...fast.slice(1), ...Array.from({ length: allowed + 1 }, () => 5_000)];
      expect(summary(oneMore).p95).toBe(5_000);
    }
  });

  it('needs every planned run, none wrong, p95 <= 2 s', () => {
    const runs = Array.from({ length: 20 }, () => 1_000);
    expect(isHeld(runs, 20)).toBe(true);
    expect(isHeld(runs, 21)).toBe(false);
    expect(isHeld([...runs.slice(1), NaN], 20)).toBe(false);
    expect(isHeld([...runs.slice(1), 2_001], 20)).toBe(true);
    expect(isHeld([...runs.slice(2), 2_001, 2_001], 20)).toBe(false);
  });

  it('stops starting runs once too many are late, and waits for those started', async () => {
    const step = await runStep(50, 1, async () => 3_000);
    expect(step.stoppedEarly).toBe(true);
    expect(step.planned).toBe(50);
    expect(step.runs.length).toBeLessThanOrEqual(lateAllowed(50) + 2);
    const fast = await runStep(50, 1, async () => 10);
    expect(fast.stoppedEarly).toBe(false);
    expect(fast.runs).toHaveLength(50);
  });
});

describe('the ladder', () => {
  /** A step runner for a system that holds up to `limit` creates/s. */
  function system(limit: number, holdLimit = limit) {
    const tried: string[] = [];
    const run = async (ratePerS: number, seconds: number, kind: LadderStep['kind']) => {
      tried.push(`${kind} ${ratePerS}`);
      const held = ratePerS <= (kind === 'hold' ? holdLimit : limit);
      const stats = { n: 1, p50: 1, p95: held ? 1 : 9_999, max: 1 };
      return {
        ...{ who: 'product' as const, ratePerS, seconds, kind, stats, held },
        ...{ started: 1, planned: 1, wrong: 0, stoppedEarly: false, wallMs: 1 },
      };
    };
    return { tried, run };
  }

  it('probes up until a rate is not held, then holds the highest probed rate', async () => {
    const { tried, run } = system(8);
    const result = await highestHeldRate([2, 4, 8, 16, 32], 60, 15, run);
    expect(result.ratePerS).toBe(8);
    expect(tried).toEqual(['probe 2', 'probe 4', 'probe 8', 'probe 16', 'hold 8']);
  });

  it('goes down when the highest probed rate is not held for the full time', async () => {
    const { tried, run } = system(8, 4);
    const result = await highestHeldRate([2, 4, 8, 16], 60, 15, run);
    expect(result.ratePerS).toBe(4);
    expect(tried).toEqual(['probe 2', 'probe 4', 'probe 8', 'probe 16', 'hold 8', 'hold 4']);
  });

  it('is 0 when not even the lowest rate holds, and climbs by holds without probes', async () => {
    expect((await highestHeldRate([2, 4], 60, 15, system(1).run)).ratePerS).toBe(0);
    const { tried, run } = system(4);
    expect((await highestHeldRate([2, 4, 8], 10, 10, run)).ratePerS).toBe(4);
    expect(tried).toEqual(['hold 2', 'hold 4', 'hold 8']);
  });
});

describe('the estimate', () => {
  it('grows with the sizes and leaves out what the baseline does not run', () => {
    const full = estimateRun(FULL_WAITS, FULL_LADDER, ['baseline', 'candidate']);
    const quick = estimateRun(QUICK_WAITS, QUICK_LADDER, ['baseline', 'candidate']);
    expect(full.minutes).toBeGreaterThan(quick.minutes);
    expect(Object.keys(full.parts)).toEqual([
      'baseline waits',
      'baseline stack',
      'candidate waits',
      'candidate stack',
    ]);
    // The candidate fills 10,000 creates; the baseline stops at 1,000.
    expect(full.parts['candidate waits']!).toBeGreaterThan(full.parts['baseline waits']!);
    const capped = estimateRun({ ...FULL_WAITS, baselineMax: 0 }, FULL_LADDER, ['baseline']);
    expect(capped.parts['baseline waits']!).toBeLessThan(full.parts['baseline waits']!);
  });
});
