/**
 * The order a side-by-side bench run measures its checkouts in (tools/bench/checkouts.ts):
 * `BENCH_ORDER` puts the candidate first or second, so a drift of the machine during a run can be
 * told from a change by running both orders (docs/benchmarks.md, "Baseline and candidate").
 */
import { afterEach, describe, expect, it } from 'vitest';
import { checkoutsOfRun } from '../tools/bench/checkouts.js';

const saved = { ...process.env };

afterEach(() => {
  for (const name of ['BENCH_ORDER', 'BASELINE_DIR', 'CANDIDATE_DIR']) {
    if (saved[name] === undefined) delete process.env[name];
    else process.env[name] = saved[name];
  }
});

describe('checkoutsOfRun', () => {
  it('measures the baseline first unless BENCH_ORDER says candidate-first', () => {
    // This checkout stands in for both: each needs only src/worker/main.ts.
    process.env.BASELINE_DIR = process.cwd();
    delete process.env.BENCH_ORDER;
    expect(checkoutsOfRun().map((c) => c.label)).toEqual(['baseline', 'candidate']);
    process.env.BENCH_ORDER = 'candidate-first';
    expect(checkoutsOfRun().map((c) => c.label)).toEqual(['candidate', 'baseline']);
    process.env.BENCH_ORDER = 'baseline-first';
    expect(checkoutsOfRun().map((c) => c.label)).toEqual(['baseline', 'candidate']);
  });

  it('refuses an order it does not know rather than measure in an order nobody asked for', () => {
    process.env.BASELINE_DIR = process.cwd();
    process.env.BENCH_ORDER = 'candidate_first';
    expect(() => checkoutsOfRun()).toThrow(/BENCH_ORDER is candidate_first/);
  });
});
