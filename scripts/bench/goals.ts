/**
 * The goals of issue 18 ("Waiting costs nothing") as a table: each row is a figure the bench
 * measures, its goal, and a function that reads one checkout's figures into a printed value and
 * PASS/MISS. The modes fill {@link GoalFigures} per checkout (scripts/bench/waits.ts: the waits
 * rows; scripts/bench/open-loop.ts and outcomes: the rows on the embedded stack) and
 * {@link printGoals} prints baseline and candidate side by side (docs/benchmarks.md).
 */
import type { Summary } from './support.js';

/** The sizes the figures were measured at (the issue's: 1,000 / 3,000 / 10,000 / 100). */
export interface GoalSizes {
  many: number;
  crowd: number;
  max: number;
  atOnce: number;
}

/** One checkout's figures; a missing one prints "not run". All times in ms. */
export interface GoalFigures {
  /** `atOnce` refusals at once, none waiting: refusal event -> operation `failed` visible. */
  refusalsAtOnceNoneWaiting?: Summary;
  /** The one-failing-activity floor, `atOnce` at once, on the same stack. */
  floorAtOnce?: Summary;
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
  /** Worker RSS (MiB) at rest with 1 and with `many` waiting. */
  rssWith1Mib?: number;
  rssWithManyMib?: number;
  /** `max` waiting: whether all were started and waiting; one refusal among them. */
  maxRan?: boolean;
  oneRefusalWithMax?: Summary;
  /** Open loop of mixed creates: the highest rate (creates/s) held with p95 <= 2 s, and the floor's. */
  openLoopRatePerS?: number;
  openLoopFloorRatePerS?: number;
  /** Worker SIGKILL with `many` waiting: waits that ended as they should, of how many. */
  killEndedRight?: number;
  killExpected?: number;
  /** The slowest of them, ms after the new worker started (the deadline is far later). */
  killSlowestMs?: number;
  /** The waiting creates' deadline, ms. */
  killDeadlineMs?: number;
}

/** A printed cell: the value and whether the goal is met (undefined: no goal judged). */
interface Cell {
  text: string;
  met?: boolean;
}

/** One row of the table: the figure, its goal, how a checkout's figures read. */
interface GoalRow {
  figure: (sizes: GoalSizes) => string;
  goal: string;
  cell: (f: GoalFigures, sizes: GoalSizes) => Cell | undefined;
}

const ms = (v: number) => (v >= 10_000 ? `${(v / 1000).toFixed(1)} s` : `${Math.round(v)} ms`);
const p50p95 = (s: Summary) => `p50 ${ms(s.p50)} / p95 ${ms(s.p95)} (n ${s.n})`;
const ratio = (a: number, b: number) => (b > 0 ? a / b : NaN);

/** The "Done when" table, top to bottom. */
export const GOAL_ROWS: GoalRow[] = [
  {
    figure: (z) => `${z.atOnce} refusals at once, none waiting, event -> failed visible`,
    goal: 'p95 <= 2 s; p50 <= 3x the one-failing-activity floor at the same concurrency',
    cell: (f) =>
      f.refusalsAtOnceNoneWaiting &&
      f.floorAtOnce && {
        text: `${p50p95(f.refusalsAtOnceNoneWaiting)}; floor p50 ${ms(f.floorAtOnce.p50)}`,
        met:
          f.refusalsAtOnceNoneWaiting.p95 <= 2_000 &&
          f.refusalsAtOnceNoneWaiting.p50 <= 3 * f.floorAtOnce.p50,
      },
  },
  {
    figure: (z) => `one refusal, event -> GET shows failed, with ${z.many} waiting`,
    goal: '<= 1.5x the same with 1 waiting',
    cell: (f) =>
      f.oneRefusalWithMany &&
      f.oneRefusalWith1 && {
        text: `p50 ${ms(f.oneRefusalWithMany.p50)} vs ${ms(f.oneRefusalWith1.p50)} with 1 (${ratio(f.oneRefusalWithMany.p50, f.oneRefusalWith1.p50).toFixed(2)}x)`,
        met: f.oneRefusalWithMany.p50 <= 1.5 * f.oneRefusalWith1.p50,
      },
  },
  {
    figure: (z) => `${z.atOnce} refusals at once with ${z.many} waiting`,
    goal: 'p95 <= 2 s',
    cell: (f) =>
      f.atOnceWithMany && { text: p50p95(f.atOnceWithMany), met: f.atOnceWithMany.p95 <= 2_000 },
  },
  {
    figure: (z) => `Temporal requests per waiting create per minute at rest (${z.many} waiting)`,
    goal: '<= 1',
    cell: (f) =>
      f.requestsPerWaitPerMin === undefined
        ? undefined
        : { text: f.requestsPerWaitPerMin.toFixed(2), met: f.requestsPerWaitPerMin <= 1 },
  },
  {
    figure: () => 'activity slots of the create task queue held per waiting create',
    goal: '0, or a separate budget that short steps never wait for',
    cell: (f) =>
      f.slotsPerWait === undefined
        ? undefined
        : { text: f.slotsPerWait.toFixed(3), met: f.slotsPerWait < 0.01 },
  },
  {
    figure: (z) => `a create started while ${z.crowd} wait: POST -> pod created`,
    goal: '<= 1.5x with none waiting',
    cell: (f) =>
      f.postToPodWithCrowd &&
      f.postToPodNoneWaiting && {
        text: `p50 ${ms(f.postToPodWithCrowd.p50)} vs ${ms(f.postToPodNoneWaiting.p50)} none waiting (${ratio(f.postToPodWithCrowd.p50, f.postToPodNoneWaiting.p50).toFixed(2)}x)`,
        met:
          f.postToPodWithCrowd.n > 0 &&
          f.postToPodWithCrowd.p50 <= 1.5 * f.postToPodNoneWaiting.p50,
      },
  },
  {
    figure: (z) => `worker RSS at ${z.many} waiting`,
    goal: '<= 1.3x of 1 waiting',
    cell: (f) =>
      f.rssWithManyMib === undefined || f.rssWith1Mib === undefined
        ? undefined
        : {
            text: `${f.rssWithManyMib} MiB vs ${f.rssWith1Mib} MiB (${ratio(f.rssWithManyMib, f.rssWith1Mib).toFixed(2)}x)`,
            met: f.rssWithManyMib <= 1.3 * f.rssWith1Mib,
          },
  },
  {
    figure: (z) => `${z.max} waiting on this machine`,
    goal: 'runs; one refusal <= 2x the 1-waiting figure',
    cell: (f) =>
      f.maxRan === undefined
        ? undefined
        : !f.maxRan || !f.oneRefusalWithMax || !f.oneRefusalWith1
          ? { text: 'did not run: not every create reached its wait', met: false }
          : {
              text: `runs; one refusal p50 ${ms(f.oneRefusalWithMax.p50)} (${ratio(f.oneRefusalWithMax.p50, f.oneRefusalWith1.p50).toFixed(2)}x)`,
              met: f.oneRefusalWithMax.p50 <= 2 * f.oneRefusalWith1.p50,
            },
  },
  {
    figure: () => 'open loop, mixed creates: highest rate held with p95 <= 2 s',
    goal: ">= 0.5x the one-activity floor's rate in the same run",
    cell: (f) =>
      f.openLoopRatePerS === undefined || f.openLoopFloorRatePerS === undefined
        ? undefined
        : {
            text: `${f.openLoopRatePerS}/s vs floor ${f.openLoopFloorRatePerS}/s`,
            met: f.openLoopRatePerS >= 0.5 * f.openLoopFloorRatePerS,
          },
  },
  {
    figure: (z) => `worker SIGKILL with ${z.many} waiting`,
    goal: 'every wait ends as it should; none waits for its deadline',
    cell: (f) =>
      f.killExpected === undefined || f.killEndedRight === undefined
        ? undefined
        : {
            text: `${f.killEndedRight}/${f.killExpected} ended right, slowest ${ms(f.killSlowestMs ?? NaN)} after the restart (deadline ${ms(f.killDeadlineMs ?? NaN)})`,
            met:
              f.killEndedRight === f.killExpected &&
              (f.killSlowestMs ?? Infinity) < (f.killDeadlineMs ?? 0) / 2,
          },
  },
];

/** The table as Markdown lines: one column pair (value, PASS/MISS) per checkout. */
export function goalTable(
  sizes: GoalSizes,
  figures: Array<{ label: string; figures: GoalFigures }>,
): string[] {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  const lines = [
    line(['figure', 'goal', ...figures.flatMap(({ label }) => [label, ''])]),
    line(['---', '---', ...figures.flatMap(() => ['---', '---'])]),
  ];
  for (const row of GOAL_ROWS) {
    const cells = figures.flatMap(({ figures: f }) => {
      const cell = row.cell(f, sizes);
      if (!cell) return ['not run', ''];
      return [cell.text, cell.met === undefined ? '' : cell.met ? 'PASS' : 'MISS'];
    });
    lines.push(line([row.figure(sizes), row.goal, ...cells]));
  }
  return lines;
}

/** Prints {@link goalTable}. */
export function printGoals(
  sizes: GoalSizes,
  figures: Array<{ label: string; figures: GoalFigures }>,
): void {
  console.log('\nissue 18, "Done when" (side by side):\n');
  for (const line of goalTable(sizes, figures)) console.log(line);
}
