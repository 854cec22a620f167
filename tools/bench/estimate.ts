/**
 * How long a `goals` run will take, printed before it starts (docs/benchmarks.md, "Sizes and
 * how long a run takes"): a model of the run's phases from its sizes and a few rates measured
 * on this machine (the assumptions below), not a measurement. The run prints each phase's time
 * as it goes, so the model can be checked against it.
 */
import type { LadderCounts } from './open-loop.js';
import type { WaitSizes } from './waits.js';

/** The rates the estimate assumes, per checkout label where they differ. */
export interface EstimateAssumptions {
  /** Creates per second a fill reaches (POST -> pod created, 8 POSTs at a time). */
  fillPerS: Record<string, number>;
  /** Seconds one refusal takes to be seen with `many` waiting. */
  refusalWithManyS: Record<string, number>;
  /** Seconds to start a checkout's servers (waits rig, or embedded stack). */
  startS: number;
  /** The rates the ladders are assumed to hold (creates/s): the climb stops above them. */
  productHeldPerS: number;
  floorHeldPerS: number;
}

/**
 * Measured on this 2-core machine at load average 20-30 (`--quick` runs of 2026-12-01, the
 * bench at `nice 10`): fills of 2.4-3 creates/s, 2-3 min to start a checkout's servers.
 */
export const ASSUMPTIONS: EstimateAssumptions = {
  fillPerS: { baseline: 3, candidate: 3 },
  refusalWithManyS: { baseline: 30, candidate: 1 },
  startS: 150,
  productHeldPerS: 4,
  floorHeldPerS: 16,
};

/** The estimate: minutes in all, and seconds per part. */
export interface RunEstimate {
  minutes: number;
  parts: Record<string, number>;
}

/** Seconds of one ladder: probes up to the first rate above `held`, then one hold. */
function ladderSeconds(rates: number[], held: number, counts: LadderCounts): number {
  const settleS = 8;
  const climbed = Math.min(rates.length, rates.filter((r) => r <= held).length + 1);
  const probing = counts.probeSeconds < counts.seconds;
  const climbS = climbed * (counts.probeSeconds + settleS);
  return climbS + (probing ? counts.seconds + settleS : 0);
}

/**
 * The run's estimated length for the checkouts `labels` (baseline first).
 * @returns minutes (rounded up) and seconds per part (`<label> waits`, `<label> stack`)
 */
export function estimateRun(
  sizes: WaitSizes,
  counts: LadderCounts,
  labels: string[],
  assumed: EstimateAssumptions = ASSUMPTIONS,
): RunEstimate {
  const parts: Record<string, number> = {};
  for (const label of labels) {
    const fill = assumed.fillPerS[label] ?? 5;
    const refusal = assumed.refusalWithManyS[label] ?? 5;
    const cap = label === 'baseline' ? sizes.baselineMax : Infinity;
    const window = sizes.windowMs / 1000;
    let waits = assumed.startS + sizes.repeats * 4.5 + window;
    let filled = 1;
    const fillTo = (size: number) => {
      const seconds = Math.max(0, size - filled) / fill + Math.min(30, 1 + (3 * size) / 1000);
      filled = Math.max(filled, size);
      return seconds;
    };
    if (sizes.many <= cap) {
      waits += fillTo(sizes.many) + window + sizes.repeats * (refusal + 3);
      waits += sizes.atOnce * Math.max(0.1, refusal / 10) + sizes.atOnce / fill;
      waits += 60 + sizes.many / 100;
    }
    if (sizes.crowd > 0 && sizes.crowd <= cap) waits += fillTo(sizes.crowd) + window + 4;
    if (sizes.max > 0 && sizes.max <= cap)
      waits += fillTo(sizes.max) + window + sizes.repeats * (refusal + 3);
    parts[`${label} waits`] = Math.round(waits);
    const stack =
      assumed.startS +
      30 +
      ladderSeconds(counts.floorRates, assumed.floorHeldPerS, counts) +
      ladderSeconds(counts.productRates, assumed.productHeldPerS, counts);
    parts[`${label} stack`] = Math.round(stack);
  }
  const seconds = Object.values(parts).reduce((a, b) => a + b, 0);
  return { minutes: Math.ceil(seconds / 60), parts };
}

/** Prints the estimate with what it assumes. */
export function printEstimate(estimate: RunEstimate, quick: boolean): void {
  const parts = Object.entries(estimate.parts)
    .map(([part, s]) => `${part} ${Math.round(s / 60)} min`)
    .join(', ');
  console.log(
    `estimate for this ${quick ? '--quick ' : ''}run: about ${estimate.minutes} min (${parts}); ` +
      `assumes ${JSON.stringify(ASSUMPTIONS)}`,
  );
}
