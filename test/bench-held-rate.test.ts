/**
 * The ladder of `npm run bench -- claims` (tools/bench/held-rate.ts): when a rung of the open loop
 * holds the p99 bound, and which rate is the highest held. The rung's verdict is pure; the loop
 * itself is timed against a stand-in request.
 */
import { describe, expect, it } from 'vitest';
import { climbRates, highestHeld, openLoop, stepOf } from '../tools/bench/held-rate.js';

describe('a rung of the ladder', () => {
  it('holds when the p99 is within the bound and every request got its answer', () => {
    const latencies = Array.from({ length: 100 }, (_, i) => (i < 99 ? 100 : 1_000));
    const step = stepOf(10, latencies, 1_000);
    expect(step).toMatchObject({ rate_per_s: 10, sent: 100, failed: 0, held: true });
    expect(step.latency_ms.p99).toBe(100);
  });

  it('does not hold when the p99 is over the bound', () => {
    const latencies = Array.from({ length: 100 }, (_, i) => (i < 98 ? 100 : 1_500));
    expect(stepOf(10, latencies, 1_000)).toMatchObject({ held: false });
  });

  it('counts a failed request (a claim that went cold) as never answered', () => {
    const latencies = [...Array.from({ length: 99 }, () => 100), NaN];
    const step = stepOf(10, latencies, 1_000);
    expect(step).toMatchObject({ failed: 1, held: false });
  });

  it('the highest rate held is 0 when none was', () => {
    const held = stepOf(10, [100], 1_000);
    const missed = stepOf(20, [2_000], 1_000);
    expect(highestHeld([held, missed])).toBe(10);
    expect(highestHeld([missed])).toBe(0);
  });
});

describe('the open loop', () => {
  it('sends rate x seconds requests, each on its schedule, without waiting for answers', async () => {
    const sentAt: number[] = [];
    const startedAtMs = performance.now();
    // Each answer takes 300 ms, longer than the 50 ms between sends: a closed loop would need 3 s.
    const { answers } = await openLoop(20, 0.5, async () => {
      sentAt.push(performance.now() - startedAtMs);
      await new Promise((resolve) => setTimeout(resolve, 300));
      return 300;
    });
    expect(answers).toEqual(Array.from({ length: 10 }, () => 300));
    // The tenth is sent on its schedule (450 ms), long before the first nine have all answered
    // one after the other (2.7 s); generous for a loaded runner.
    expect(sentAt[9]).toBeLessThan(1_500);
  });

  it('reports how late each request was sent behind its schedule', async () => {
    // The first send holds the event loop for 200 ms: the second, due 50 ms after the start,
    // can only be sent after it, at least 150 ms late.
    let sent = 0;
    const run = await openLoop(20, 0.5, async () => {
      if (sent++ === 0) {
        const busyUntilMs = performance.now() + 200;
        while (performance.now() < busyUntilMs);
      }
      return 0;
    });
    expect(run.late_ms).toHaveLength(10);
    expect(run.late_ms[1], 'ms the second send was late').toBeGreaterThanOrEqual(150);
  });

  it('climbs until the first rung not held, and stops there', async () => {
    const rates: number[] = [];
    const steps = await climbRates({
      label: 'test',
      rates: [10, 20, 30],
      seconds: 0.2,
      p99BoundMs: 1_000,
      send: async () => 0,
      before: async () => {
        rates.push(rates.length);
      },
    });
    expect(steps.map((s) => s.held)).toEqual([true, true, true]);
    expect(rates).toHaveLength(3);
    const failing = await climbRates({
      label: 'test',
      rates: [10, 20, 30],
      seconds: 0.2,
      p99BoundMs: 1_000,
      send: async () => NaN,
    });
    expect(failing).toHaveLength(1);
    expect(highestHeld(failing)).toBe(0);
  });
});
