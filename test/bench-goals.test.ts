/**
 * The bench's goal table (tools/bench/goals.ts) against issue 18's "Done when" thresholds, and
 * its reading of Prometheus text (tools/bench/prometheus.ts): pure functions, no servers.
 */
import { describe, expect, it } from 'vitest';
import { GOAL_ROW_IDS, goalTable, unmeasuredRows, type GoalFigures } from '../tools/bench/goals.js';
import { parseSamples, sumBy, sumOf } from '../tools/bench/prometheus.js';

const SIZES = { many: 1000, crowd: 3000, max: 10000, atOnce: 100 };
const s = (p50: number, p95 = p50) => ({ n: 5, p50, p95, max: p95 });

/** The PASS/MISS cell of the row whose figure starts with `figure`, for the one checkout. */
function verdict(figures: GoalFigures, figure: string): string {
  const row = goalTable(SIZES, [{ label: 'candidate', figures }]).find((line) =>
    line.startsWith(`| ${figure}`),
  );
  if (!row) throw new Error(`no row ${figure}`);
  return row.split('|').at(-2)!.trim();
}

describe('the goal table', () => {
  it('passes one refusal with 1,000 waiting at 1.5x the 1-waiting figure and misses above it', () => {
    const figure = 'one refusal, event -> GET shows failed, with 1000 waiting';
    expect(verdict({ oneRefusalWith1: s(200), oneRefusalWithMany: s(300) }, figure)).toBe('PASS');
    expect(verdict({ oneRefusalWith1: s(200), oneRefusalWithMany: s(301) }, figure)).toBe('MISS');
  });

  it('needs p95 <= 2 s and p50 <= 3x the floor for 100 refusals with none waiting', () => {
    const figure = '100 refusals at once, none waiting';
    const floorAtOnce = s(250);
    expect(verdict({ refusalsAtOnceNoneWaiting: s(750, 2000), floorAtOnce }, figure)).toBe('PASS');
    expect(verdict({ refusalsAtOnceNoneWaiting: s(751, 1000), floorAtOnce }, figure)).toBe('MISS');
    expect(verdict({ refusalsAtOnceNoneWaiting: s(500, 2001), floorAtOnce }, figure)).toBe('MISS');
  });

  it("passes CPU per create at half the baseline's in the same run, misses above it", () => {
    const row = (baseline: number, candidate: number) =>
      goalTable(SIZES, [
        { label: 'baseline', figures: { cpuMsPerCreate: baseline } },
        { label: 'candidate', figures: { cpuMsPerCreate: candidate } },
      ])
        .find((line) => line.startsWith('| stack-process CPU per refused create'))!
        .split('|')
        .map((cell) => cell.trim());
    // | figure | goal | baseline value | verdict | candidate value | verdict |
    expect(row(115, 57.5).slice(3, 7)).toEqual([
      '115.0 ms',
      'baseline',
      "57.5 ms (0.50x the baseline's)",
      'PASS',
    ]);
    expect(row(115, 57.6)[6]).toBe('MISS');
    expect(row(115, 57.5)[4]).toBe('baseline');
    // Alone, a candidate's figure is printed but judged against nothing.
    const alone = goalTable(SIZES, [{ label: 'candidate', figures: { cpuMsPerCreate: 60 } }]).find(
      (line) => line.startsWith('| stack-process CPU'),
    )!;
    expect(alone).toContain('| 60.0 ms | no baseline |');
  });

  it('needs p95 <= 2 s over all 100 refusals at once with 1,000 waiting', () => {
    const figure = '100 refusals at once with 1000 waiting';
    const all = { n: 100, p50: 500, p95: 2000, max: 2500 };
    expect(verdict({ atOnceWithMany: all }, figure)).toBe('PASS');
    expect(verdict({ atOnceWithMany: { ...all, p95: 2001 } }, figure)).toBe('MISS');
    // 3 of them never ended as they should: not a pass, whatever the others' p95.
    expect(verdict({ atOnceWithMany: { ...all, n: 97 } }, figure)).toBe('MISS');
  });

  it('misses 30 requests per waiting create per minute, passes 1', () => {
    const figure = 'Temporal requests per waiting create';
    expect(verdict({ requestsPerWaitPerMin: 30 }, figure)).toBe('MISS');
    expect(verdict({ requestsPerWaitPerMin: 1 }, figure)).toBe('PASS');
  });

  it('misses one slot per waiting create, passes none', () => {
    const figure = 'activity slots of the create task queue';
    expect(verdict({ slotsPerWait: 1 }, figure)).toBe('MISS');
    expect(verdict({ slotsPerWait: 0 }, figure)).toBe('PASS');
  });

  it('passes a create among 3,000 waiting at 1.5x the time with none waiting', () => {
    const figure = 'a create started while 3000 wait';
    const none = s(400);
    expect(verdict({ postToPodNoneWaiting: none, postToPodWithCrowd: s(600) }, figure)).toBe(
      'PASS',
    );
    expect(verdict({ postToPodNoneWaiting: none, postToPodWithCrowd: s(601) }, figure)).toBe(
      'MISS',
    );
  });

  it('passes worker RSS at 1.3x of 1 waiting, misses above it', () => {
    const figure = 'worker RSS at 1000 waiting';
    expect(verdict({ rssWith1Mib: 450, rssWithManyMib: 585 }, figure)).toBe('PASS');
    expect(verdict({ rssWith1Mib: 450, rssWithManyMib: 586 }, figure)).toBe('MISS');
  });

  it('passes 10,000 waiting when all reached their wait and one refusal is within 2x', () => {
    const figure = '10000 waiting on this machine';
    const base = { oneRefusalWith1: s(200), reached: { max: 10_000 } };
    expect(verdict({ ...base, oneRefusalWithMax: s(400) }, figure)).toBe('PASS');
    expect(verdict({ ...base, oneRefusalWithMax: s(401) }, figure)).toBe('MISS');
    expect(verdict({ ...base, reached: { max: 9_000 } }, figure)).toBe('MISS');
  });

  it('misses a row measured at a size not every create reached', () => {
    const figure = 'worker RSS at 1000 waiting';
    const rss = { rssWith1Mib: 450, rssWithManyMib: 460 };
    expect(verdict({ ...rss, reached: { many: 999 } }, figure)).toBe('MISS');
    expect(verdict({ ...rss, reached: { many: 1000 } }, figure)).toBe('PASS');
  });

  it('passes the open loop at 0.8x the floor rate, misses below it or with no floor', () => {
    const figure = 'open loop, mixed creates';
    expect(verdict({ openLoopRatePerS: 16, openLoopFloorRatePerS: 16 }, figure)).toBe('PASS');
    expect(verdict({ openLoopRatePerS: 13, openLoopFloorRatePerS: 16 }, figure)).toBe('PASS');
    expect(verdict({ openLoopRatePerS: 12, openLoopFloorRatePerS: 16 }, figure)).toBe('MISS');
    expect(verdict({ openLoopRatePerS: 0, openLoopFloorRatePerS: 0 }, figure)).toBe('MISS');
  });

  it('misses a worker kill after which one wait ended wrong or none was decided', () => {
    const figure = 'worker SIGKILL with 1000 waiting';
    const kill = { killExpected: 1000, killDecided: s(5_000), killDeadlineMs: 14_400_000 };
    expect(verdict({ ...kill, killEndedRight: 1000 }, figure)).toBe('PASS');
    expect(verdict({ ...kill, killEndedRight: 999 }, figure)).toBe('MISS');
    const none = { n: 0, p50: NaN, p95: NaN, max: NaN };
    expect(verdict({ ...kill, killDecided: none, killEndedRight: 1000 }, figure)).toBe('MISS');
  });

  it('prints "not run" with its reason, and that is not an error', () => {
    const figures = { notRun: { max: 'the baseline holds one slot per wait' } };
    const row = goalTable(SIZES, [{ label: 'baseline', figures }]).find((l) =>
      l.startsWith('| 10000 waiting'),
    )!;
    expect(row).toContain('not run: the baseline holds one slot per wait');
    expect(unmeasuredRows(SIZES, [{ label: 'baseline', figures }], ['max'])).toEqual([]);
  });

  it('makes a row it could not measure an error, never a pass', () => {
    const nan = { n: 0, p50: NaN, p95: NaN, max: NaN };
    const figures: GoalFigures = { oneRefusalWith1: s(200), oneRefusalWithMany: nan };
    const row = goalTable(SIZES, [{ label: 'candidate', figures }]).find((l) =>
      l.startsWith('| one refusal'),
    )!;
    expect(row).toContain('ERROR');
    expect(row).not.toContain('PASS');
    const missing = unmeasuredRows(SIZES, [{ label: 'candidate', figures }]);
    expect(missing).toHaveLength(GOAL_ROW_IDS.length);
    expect(missing.some((m) => m.startsWith('candidate: row "one refusal'))).toBe(true);
  });

  it('prints only the rows a mode measures', () => {
    const lines = goalTable(SIZES, [{ label: 'candidate', figures: {} }], ['openLoop']);
    expect(lines).toHaveLength(3);
    expect(lines[2]).toContain('open loop');
  });
});

describe('Prometheus text', () => {
  const text = [
    '# HELP temporal_request_total requests',
    'temporal_request_total{operation="RecordActivityTaskHeartbeat",task_queue="q"} 42',
    'temporal_request_total{operation="PollActivityTaskQueue",task_queue="q"} 7',
    'temporal_worker_task_slots_used{worker_type="ActivityWorker",task_queue="q"} 3',
    'temporal_worker_task_slots_used{worker_type="WorkflowWorker",task_queue="q"} 1',
  ].join('\n');

  it('sums a metric by label predicate and groups it by a label', () => {
    const samples = parseSamples(text);
    expect(
      sumOf(samples, 'temporal_request_total', { operation: (op) => !op.startsWith('Poll') }),
    ).toBe(42);
    expect(
      sumOf(samples, 'temporal_worker_task_slots_used', { worker_type: 'ActivityWorker' }),
    ).toBe(3);
    expect(sumBy(samples, 'temporal_request_total', 'operation')).toEqual({
      RecordActivityTaskHeartbeat: 42,
      PollActivityTaskQueue: 7,
    });
  });
});
