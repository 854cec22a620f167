/**
 * The bench's goal table (scripts/bench/goals.ts) against issue 18's "Done when" thresholds, and
 * its reading of Prometheus text (scripts/bench/prometheus.ts): pure functions, no servers.
 */
import { describe, expect, it } from 'vitest';
import { goalTable, type GoalFigures } from '../scripts/bench/goals.js';
import { parseSamples, sumBy, sumOf } from '../scripts/bench/prometheus.js';

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

  it('misses 30 requests per waiting create per minute, passes 1', () => {
    const figure = 'Temporal requests per waiting create';
    expect(verdict({ requestsPerWaitPerMin: 30 }, figure)).toBe('MISS');
    expect(verdict({ requestsPerWaitPerMin: 1 }, figure)).toBe('PASS');
  });

  it('passes the open loop at half the floor rate, misses below it', () => {
    const figure = 'open loop, mixed creates';
    expect(verdict({ openLoopRatePerS: 8, openLoopFloorRatePerS: 16 }, figure)).toBe('PASS');
    expect(verdict({ openLoopRatePerS: 6, openLoopFloorRatePerS: 16 }, figure)).toBe('MISS');
  });

  it('misses a worker kill after which one wait ended wrong', () => {
    const figure = 'worker SIGKILL with 1000 waiting';
    const kill = { killExpected: 75, killSlowestMs: 5_000, killDeadlineMs: 14_400_000 };
    expect(verdict({ ...kill, killEndedRight: 75 }, figure)).toBe('PASS');
    expect(verdict({ ...kill, killEndedRight: 74 }, figure)).toBe('MISS');
  });

  it('prints "not run" for a figure that was not measured', () => {
    const row = goalTable(SIZES, [{ label: 'baseline', figures: {} }]).at(-1)!;
    expect(row).toContain('not run');
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
