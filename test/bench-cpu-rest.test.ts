/**
 * When `npm run bench -- cpu` counts its processes at rest (tools/bench/cpu-rest.ts): the
 * expiry's idle rate is read once the creates' work has settled, and its window opens only once
 * the extends' work is done. Meters are functions of a faked clock; no process is read.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { isAtRest, readRest, untilBackAtRest } from '../tools/bench/cpu-rest.js';
import type { IdleReading } from '../tools/bench/floor-cpu.js';

/** A reading of meters `a` and `b` over `ms`, from their CPU ms over it. */
const reading = (a: number, b: number, ms = 3_000): IdleReading<'a' | 'b'> => ({
  cpuMs: { a, b },
  ms,
});

describe('a reading at rest', () => {
  it('is at most the rest rate plus 10%', () => {
    const rest = reading(1_500, 30); // a: 0.5 ms/ms
    expect(isAtRest(reading(1_650, 30), rest)).toBe(true); // 0.55
    expect(isAtRest(reading(1_660, 30), rest)).toBe(false); // 0.553
  });

  it('is at most 0.01 ms/ms above a near-idle rest rate', () => {
    const rest = reading(3, 3); // 0.001 ms/ms each
    expect(isAtRest(reading(33, 3), rest)).toBe(true); // 0.011
    expect(isAtRest(reading(36, 3), rest)).toBe(false); // 0.012
  });

  it('compares rates, not CPU ms, over readings of other lengths', () => {
    expect(isAtRest(reading(60, 60, 6_000), reading(30, 30))).toBe(true);
    expect(isAtRest(reading(60, 60), reading(30, 30, 6_000))).toBe(false);
  });

  it('holds every meter at rest: one still busy is not rest', () => {
    // The worker of the split shape still working through the extends, the API idle.
    expect(isAtRest(reading(3, 1_200), reading(3, 30))).toBe(false);
  });

  it('lets a meter whose process is gone (NaN) hold nothing up', () => {
    expect(isAtRest(reading(NaN, 30), reading(3, 30))).toBe(true);
  });
});

/**
 * A CPU meter of a process whose rate (ms/ms) on the faked clock is each step's `rate` until its
 * `untilMs`, then `idle`.
 */
function steps(rates: { rate: number; untilMs: number }[], idle: number) {
  const startMs = performance.now();
  return () => {
    const t = performance.now() - startMs;
    let cpu = 0;
    let fromMs = 0;
    for (const { rate, untilMs } of rates) {
      cpu += rate * Math.max(0, Math.min(t, untilMs) - fromMs);
      fromMs = untilMs;
    }
    return cpu + idle * Math.max(0, t - fromMs);
  };
}

/** A process busy at `busy` ms/ms until `untilMs`, then at `idle`. */
const tail = (busy: number, untilMs: number, idle: number) =>
  steps([{ rate: busy, untilMs }], idle);

describe('waiting for rest', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'performance', 'Date'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('takes the rest rate once the rate stopped falling, not during the tail', async () => {
    // The creates' tail falling away: 0.4 ms/ms, then 0.1, then at rest at 0.02.
    const worker = steps(
      [
        { rate: 0.4, untilMs: 4_000 },
        { rate: 0.1, untilMs: 8_000 },
      ],
      0.02,
    );
    const meters = { worker, api: tail(0.01, 0, 0.01) };
    const rested = readRest(meters, Date.now() + 60_000);
    await vi.runAllTimersAsync();
    const { rest, settled } = await rested;
    expect(settled).toBe(true);
    expect(rest.cpuMs.worker / rest.ms).toBeCloseTo(0.02, 5);
  });

  it('says when the rate was still falling at the deadline', async () => {
    // A rate halving every 3 s from 1 ms/ms: each reading half the one before.
    const startMs = performance.now();
    const halving = () => (3_000 / Math.LN2) * (1 - 2 ** (-(performance.now() - startMs) / 3_000));
    const rested = readRest({ worker: halving }, Date.now() + 12_000);
    await vi.runAllTimersAsync();
    expect((await rested).settled).toBe(false);
  });

  it('opens the window only once the processes are back at the rest rate', async () => {
    const rest = { cpuMs: { worker: 60 }, ms: 3_000 }; // 0.02 ms/ms
    const startMs = Date.now();
    const back = untilBackAtRest({ worker: tail(0.5, 10_000, 0.02) }, rest, startMs + 60_000);
    await vi.runAllTimersAsync();
    expect(await back).toBe(true);
    // Readings of 3 s: the first wholly after the tail ends at 10 s is 12 s to 15 s.
    expect(Date.now() - startMs).toBe(15_000);
  });

  it('says when the processes are still busy at the deadline', async () => {
    const rest = { cpuMs: { worker: 60 }, ms: 3_000 };
    const startMs = Date.now();
    const back = untilBackAtRest({ worker: tail(0.5, 60_000, 0.02) }, rest, startMs + 20_000);
    await vi.runAllTimersAsync();
    expect(await back).toBe(false);
    expect(Date.now() - startMs).toBeLessThanOrEqual(20_000);
  });
});
