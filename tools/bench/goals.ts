/**
 * The goals of issue 18 ("Waiting costs nothing") as a table: each row is a figure the bench
 * measures, its goal, and a function that reads one checkout's figures into a printed value and
 * PASS/MISS. The modes fill {@link GoalFigures} per checkout (tools/bench/waits.ts: the waits
 * rows; tools/bench/open-loop.ts: the rows on the embedded stack) and {@link printGoals}
 * prints baseline and candidate side by side (docs/benchmarks.md). A row is measured (a value
 * and PASS/MISS), "not run" with the reason the mode gave for it, or unmeasured: an error
 * ({@link unmeasuredRows}), never a pass.
 */
import type { Summary } from './support.js';

/** The sizes the figures were measured at (the issue's: 1,000 / 3,000 / 10,000 / 100). */
export interface GoalSizes {
  many: number;
  crowd: number;
  max: number;
  atOnce: number;
}

/** The rows of the table, top to bottom, by id. */
export const GOAL_ROW_IDS = [
  'refusalsAtOnceNoneWaiting',
  'cpuPerCreate',
  'oneRefusalWithMany',
  'atOnceWithMany',
  'requestsPerWait',
  'slotsPerWait',
  'postToPodWithCrowd',
  'rssWithMany',
  'max',
  'openLoop',
  'kill',
] as const;

/** A row's id. */
export type GoalRowId = (typeof GOAL_ROW_IDS)[number];

/** The rows measured on the embedded stack (tools/bench/open-loop.ts). */
export const STACK_ROW_IDS: readonly GoalRowId[] = [
  'refusalsAtOnceNoneWaiting',
  'cpuPerCreate',
  'openLoop',
];

/** The rows measured with waiting creates (tools/bench/waits.ts). */
export const WAITS_ROW_IDS: readonly GoalRowId[] = GOAL_ROW_IDS.filter(
  (id) => !STACK_ROW_IDS.includes(id),
);

/** One checkout's figures; a missing one is "not run" (with a reason) or unmeasured. All times in ms. */
export interface GoalFigures {
  /** Rows this checkout was not run for on purpose, and why (printed as "not run: <why>"). */
  notRun?: Partial<Record<GoalRowId, string>>;
  /** How many creates reached their wait (pod created) when the size was measured. */
  reached?: Partial<Record<'many' | 'crowd' | 'max', number>>;
  /** `atOnce` refusals at once, none waiting: refusal event -> operation `failed` visible. */
  refusalsAtOnceNoneWaiting?: Summary;
  /**
   * The one-failing-activity floor, `atOnce` at once, on the same stack, timed from its
   * activity's throw (like the product's figure, from the refusal); and from the start call.
   */
  floorAtOnce?: Summary;
  floorAtOnceFromStart?: Summary;
  /**
   * CPU time of the stack process (API + worker + simulated cluster) per refused create of the
   * `atOnce` burst, compensation included, idle use subtracted, in ms (issue 34).
   */
  cpuMsPerCreate?: number;
  /**
   * The CPU floor of that figure: the bench process's CPU (the floors' worker and client) per
   * workflow of a refusal's Temporal shape with no-op steps (tools/bench/floor-workflows.ts
   * `floorRefusalShape`), `atOnce` at once on the same dev server, idle use subtracted, in ms;
   * and the same for the one-failing-activity floor.
   */
  cpuFloorMsPerRefusalShape?: number;
  cpuFloorMsPerOneActivity?: number;
  /** One refusal (event -> GET shows failed) with 1 waiting, and with `many` waiting. */
  oneRefusalWith1?: Summary;
  oneRefusalWithMany?: Summary;
  /** `atOnce` refusals at once with `many` waiting. */
  atOnceWithMany?: Summary;
  /** Temporal requests per waiting create per minute at rest, `many` waiting (SDK metrics). */
  requestsPerWaitPerMin?: number;
  /** Activity slots of the create task queue held per waiting create at rest, `many` waiting. */
  slotsPerWait?: number;
  /** A create's POST -> its pod POST at the apiserver, none waiting and `crowd` waiting. */
  postToPodNoneWaiting?: Summary;
  postToPodWithCrowd?: Summary;
  /** Worker RSS (MiB, /proc/<pid>/status VmRSS) at rest with 1 and with `many` waiting. */
  rssWith1Mib?: number;
  rssWithManyMib?: number;
  /** One refusal with 1 waiting on the rig that then fills to `crowd` and `max` (row `max`). */
  oneRefusalWith1BesideMax?: Summary;
  /** One refusal among `max` waiting (measured only when all `max` reached their wait). */
  oneRefusalWithMax?: Summary;
  /** Open loop of mixed creates: the highest rate (creates/s) held with p95 <= 2 s, and the floor's. */
  openLoopRatePerS?: number;
  openLoopFloorRatePerS?: number;
  /** p95 (ms) of the held 60 s steps, product and floor (undefined when none held). */
  openLoopP95Ms?: number;
  openLoopFloorP95Ms?: number;
  /** Seconds each held rate was held. */
  openLoopSeconds?: number;
  /** Worker SIGKILL with `many` waiting: waits that ended as they should, of how many. */
  killEndedRight?: number;
  killExpected?: number;
  /** ms from the new worker's start to each decided wait's outcome being visible. */
  killDecided?: Summary;
  /** The waiting creates' deadline, ms. */
  killDeadlineMs?: number;
}

/**
 * A printed cell: the value and whether the goal is met; `met` undefined: the goal compares
 * with the baseline, and this is the baseline's own cell.
 */
export interface Cell {
  text: string;
  met: boolean | undefined;
}

/** One row of the table: the figure, its goal, how a checkout's figures read. */
interface GoalRow {
  id: GoalRowId;
  figure: (sizes: GoalSizes) => string;
  goal: string;
  /**
   * The cell, or undefined when a figure it needs is missing or not finite. `baseline`: the
   * baseline checkout's figures, for a goal relative to it (absent in the baseline's own cell).
   */
  cell: (f: GoalFigures, sizes: GoalSizes, baseline?: GoalFigures) => Cell | undefined;
}

const ms = (v: number) => (v >= 10_000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`);
const p50p95 = (s: Summary) => `p50 ${ms(s.p50)} / p95 ${ms(s.p95)} (n ${s.n})`;
const ratio = (a: number, b: number) => (b > 0 ? a / b : NaN);
const x = (a: number, b: number) => `${ratio(a, b).toFixed(2)}x`;

/** A summary with at least one finite run. */
export const measured = (s: Summary | undefined): s is Summary =>
  s !== undefined && s.n > 0 && Number.isFinite(s.p50) && Number.isFinite(s.p95);
const finite = (v: number | undefined): v is number => v !== undefined && Number.isFinite(v);

/**
 * A row measured at a size that not every create reached: MISS, saying how many did (the
 * figure then is for a smaller crowd than the row names). Undefined when all reached.
 */
function shortOf(
  f: GoalFigures,
  sizes: GoalSizes,
  size: 'many' | 'crowd' | 'max',
): Cell | undefined {
  const reached = f.reached?.[size];
  if (reached === undefined || reached >= sizes[size]) return undefined;
  return {
    text: `only ${reached} of ${sizes[size]} creates reached their wait within the fill's bound`,
    met: false,
  };
}

/** The issue's "Done when" table, top to bottom (the order of {@link GOAL_ROW_IDS}). */
export const GOAL_ROWS: GoalRow[] = [
  {
    id: 'refusalsAtOnceNoneWaiting',
    figure: (z) => `${z.atOnce} refusals at once, none waiting, event -> failed visible`,
    goal: 'p95 <= 2 s; p50 <= 3x the one-failing-activity floor at the same concurrency',
    cell: (f) =>
      measured(f.refusalsAtOnceNoneWaiting) && measured(f.floorAtOnce)
        ? {
            text: `${p50p95(f.refusalsAtOnceNoneWaiting)}; floor p50 ${ms(f.floorAtOnce.p50)} from its refusal${f.floorAtOnceFromStart ? ` (${ms(f.floorAtOnceFromStart.p50)} from its start)` : ''}`,
            met:
              f.refusalsAtOnceNoneWaiting.p95 <= 2_000 &&
              f.refusalsAtOnceNoneWaiting.p50 <= 3 * f.floorAtOnce.p50,
          }
        : undefined,
  },
  {
    id: 'cpuPerCreate',
    figure: (z) =>
      `stack-process CPU per refused create (${z.atOnce} at once, compensation included)`,
    goal: "<= 0.5x the baseline's in the same run",
    cell: (f, _z, baseline) => {
      if (!finite(f.cpuMsPerCreate)) return undefined;
      const floor = finite(f.cpuFloorMsPerRefusalShape)
        ? `; floor: the refusal's Temporal shape, no-op steps ${f.cpuFloorMsPerRefusalShape.toFixed(1)} ms${finite(f.cpuFloorMsPerOneActivity) ? `, one failing activity ${f.cpuFloorMsPerOneActivity.toFixed(1)} ms` : ''}`
        : '';
      const text = `${f.cpuMsPerCreate.toFixed(1)} ms${floor}`;
      if (!baseline) return { text, met: undefined };
      if (!finite(baseline.cpuMsPerCreate)) return undefined;
      return {
        text: `${text} (${x(f.cpuMsPerCreate, baseline.cpuMsPerCreate)} the baseline's)`,
        met: f.cpuMsPerCreate <= 0.5 * baseline.cpuMsPerCreate,
      };
    },
  },
  {
    id: 'oneRefusalWithMany',
    figure: (z) => `one refusal, event -> GET shows failed, with ${z.many} waiting`,
    goal: '<= 1.5x the same with 1 waiting',
    cell: (f, z) =>
      measured(f.oneRefusalWithMany) && measured(f.oneRefusalWith1)
        ? (shortOf(f, z, 'many') ?? {
            text: `p50 ${ms(f.oneRefusalWithMany.p50)} vs ${ms(f.oneRefusalWith1.p50)} with 1 (${x(f.oneRefusalWithMany.p50, f.oneRefusalWith1.p50)})`,
            met: f.oneRefusalWithMany.p50 <= 1.5 * f.oneRefusalWith1.p50,
          })
        : undefined,
  },
  {
    id: 'atOnceWithMany',
    figure: (z) => `${z.atOnce} refusals at once with ${z.many} waiting`,
    goal: 'p95 <= 2 s',
    cell: (f, z) =>
      measured(f.atOnceWithMany)
        ? (shortOf(f, z, 'many') ?? {
            text: p50p95(f.atOnceWithMany),
            met: f.atOnceWithMany.n === z.atOnce && f.atOnceWithMany.p95 <= 2_000,
          })
        : undefined,
  },
  {
    id: 'requestsPerWait',
    figure: (z) => `Temporal requests per waiting create per minute at rest (${z.many} waiting)`,
    goal: '<= 1',
    cell: (f, z) =>
      finite(f.requestsPerWaitPerMin)
        ? (shortOf(f, z, 'many') ?? {
            text: f.requestsPerWaitPerMin.toFixed(2),
            met: f.requestsPerWaitPerMin <= 1,
          })
        : undefined,
  },
  {
    id: 'slotsPerWait',
    figure: (z) => `activity slots of the create task queue held per waiting create (${z.many})`,
    goal: '0, or a separate budget that short steps never wait for',
    cell: (f, z) =>
      finite(f.slotsPerWait)
        ? (shortOf(f, z, 'many') ?? {
            text: f.slotsPerWait.toFixed(3),
            met: f.slotsPerWait < 0.01,
          })
        : undefined,
  },
  {
    id: 'postToPodWithCrowd',
    figure: (z) => `a create started while ${z.crowd} wait: POST -> pod created`,
    goal: '<= 1.5x with none waiting',
    cell: (f, z) =>
      measured(f.postToPodWithCrowd) && measured(f.postToPodNoneWaiting)
        ? (shortOf(f, z, 'crowd') ?? {
            text: `p50 ${ms(f.postToPodWithCrowd.p50)} vs ${ms(f.postToPodNoneWaiting.p50)} none waiting (${x(f.postToPodWithCrowd.p50, f.postToPodNoneWaiting.p50)})`,
            met: f.postToPodWithCrowd.p50 <= 1.5 * f.postToPodNoneWaiting.p50,
          })
        : undefined,
  },
  {
    id: 'rssWithMany',
    figure: (z) => `worker RSS at ${z.many} waiting vs 1 waiting`,
    goal: '<= 1.3x of 1 waiting',
    cell: (f, z) =>
      finite(f.rssWithManyMib) && finite(f.rssWith1Mib) && f.rssWith1Mib > 0
        ? (shortOf(f, z, 'many') ?? {
            text: `${f.rssWithManyMib} MiB vs ${f.rssWith1Mib} MiB (${x(f.rssWithManyMib, f.rssWith1Mib)})`,
            met: f.rssWithManyMib <= 1.3 * f.rssWith1Mib,
          })
        : undefined,
  },
  {
    id: 'max',
    figure: (z) => `${z.max} waiting on this machine`,
    goal: 'runs; one refusal <= 2x the 1-waiting figure',
    cell: (f, z) => {
      const short = shortOf(f, z, 'max');
      if (short) return { text: `does not run: ${short.text}`, met: false };
      const one = f.oneRefusalWith1BesideMax ?? f.oneRefusalWith1;
      if (!measured(f.oneRefusalWithMax) || !measured(one)) return undefined;
      return {
        text: `runs; one refusal p50 ${ms(f.oneRefusalWithMax.p50)} vs ${ms(one.p50)} with 1 (${x(f.oneRefusalWithMax.p50, one.p50)})`,
        met: f.oneRefusalWithMax.p50 <= 2 * one.p50,
      };
    },
  },
  {
    id: 'openLoop',
    figure: () => 'open loop, mixed creates: highest rate held with p95 <= 2 s',
    goal: ">= 0.8x the one-activity floor's rate in the same run",
    cell: (f) => {
      if (!finite(f.openLoopRatePerS) || !finite(f.openLoopFloorRatePerS)) return undefined;
      const p95 = (v: number | undefined) => (finite(v) ? `, p95 ${ms(v)}` : '');
      return {
        text:
          `${f.openLoopRatePerS}/s${p95(f.openLoopP95Ms)} vs floor ${f.openLoopFloorRatePerS}/s` +
          `${p95(f.openLoopFloorP95Ms)}, each held ${f.openLoopSeconds ?? '?'} s (${x(f.openLoopRatePerS, f.openLoopFloorRatePerS)})`,
        met: f.openLoopFloorRatePerS > 0 && f.openLoopRatePerS >= 0.8 * f.openLoopFloorRatePerS,
      };
    },
  },
  {
    id: 'kill',
    figure: (z) => `worker SIGKILL with ${z.many} waiting`,
    goal: 'every wait ends as it should; none waits for its deadline',
    cell: (f, z) => {
      if (!finite(f.killExpected) || !finite(f.killEndedRight) || f.killExpected === 0)
        return undefined;
      const decided = measured(f.killDecided)
        ? `; decided p50 ${ms(f.killDecided.p50)} / max ${ms(f.killDecided.max)} after the new worker started`
        : '; none decided';
      return (
        shortOf(f, z, 'many') ?? {
          text: `${f.killEndedRight}/${f.killExpected} ended right${decided} (deadline ${ms(f.killDeadlineMs ?? NaN)})`,
          met:
            f.killEndedRight === f.killExpected &&
            measured(f.killDecided) &&
            f.killDecided.max < (f.killDeadlineMs ?? 0) / 2,
        }
      );
    },
  },
];

/** One checkout's cell for a row: measured, "not run" with its reason, or unmeasured. */
export function cellOf(
  row: GoalRow,
  f: GoalFigures,
  sizes: GoalSizes,
  baseline?: GoalFigures,
): Cell | { notRun: string } | undefined {
  const why = f.notRun?.[row.id];
  if (why !== undefined) return { notRun: why };
  return row.cell(f, sizes, baseline);
}

/** The baseline's figures for the checkout at `index` (the first checkout is the baseline). */
function baselineFor(
  figures: Array<{ label: string; figures: GoalFigures }>,
  index: number,
): GoalFigures | undefined {
  return index > 0 && figures[0]?.label === 'baseline' ? figures[0].figures : undefined;
}

/**
 * The table as Markdown lines: one column pair (value, PASS/MISS) per checkout, for the rows
 * `ids` (default: all). An unmeasured cell reads "NOT MEASURED (error)".
 */
export function goalTable(
  sizes: GoalSizes,
  figures: Array<{ label: string; figures: GoalFigures }>,
  ids: readonly GoalRowId[] = GOAL_ROW_IDS,
): string[] {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const lines = [
    line(['figure', 'goal', ...figures.flatMap(({ label }) => [label, ''])]),
    line(['---', '---', ...figures.flatMap(() => ['---', '---'])]),
  ];
  for (const row of GOAL_ROWS.filter((r) => ids.includes(r.id))) {
    const cells = figures.flatMap(({ label, figures: f }, i) => {
      const cell = cellOf(row, f, sizes, baselineFor(figures, i));
      if (cell === undefined) return ['NOT MEASURED (error)', 'ERROR'];
      if ('notRun' in cell) return [`not run: ${cell.notRun}`, ''];
      if (cell.met === undefined)
        return [cell.text, label === 'baseline' ? 'baseline' : 'no baseline'];
      return [cell.text, cell.met ? 'PASS' : 'MISS'];
    });
    lines.push(line([row.figure(sizes), row.goal, ...cells]));
  }
  return lines;
}

/**
 * The rows a checkout should have measured but did not (no figure, or no finite one, and no
 * "not run" reason), as messages for the run's problems.
 */
export function unmeasuredRows(
  sizes: GoalSizes,
  figures: Array<{ label: string; figures: GoalFigures }>,
  ids: readonly GoalRowId[] = GOAL_ROW_IDS,
): string[] {
  const missing: string[] = [];
  for (const [i, { label, figures: f }] of figures.entries())
    for (const row of GOAL_ROWS.filter((r) => ids.includes(r.id)))
      if (cellOf(row, f, sizes, baselineFor(figures, i)) === undefined)
        missing.push(`${label}: row "${row.figure(sizes)}" could not be measured`);
  return missing;
}

/** Prints {@link goalTable} for the rows `ids` (default: all). */
export function printGoals(
  sizes: GoalSizes,
  figures: Array<{ label: string; figures: GoalFigures }>,
  ids: readonly GoalRowId[] = GOAL_ROW_IDS,
): void {
  console.log('\nissue 18, "Done when" (side by side):\n');
  for (const line of goalTable(sizes, figures, ids)) console.log(line);
}
