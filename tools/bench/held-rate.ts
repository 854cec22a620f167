/**
 * The highest rate an open loop holds (issue 50: "otherwise the highest rate held with p99 <=
 * 1 s"): the loop sends at each rate of a rising ladder for a fixed time, each request on its
 * schedule whether or not the ones before have answered, and the rate is held when the p99 of
 * its answers is within the bound. The ladder stops at the first rate not held: a loaded system
 * only gets slower above it. Used by `npm run bench -- claims` (tools/bench/claims.ts); its open
 * loop by `pool` too (tools/bench/pool.ts).
 */
import { sleep, summary, type Summary } from './support.js';

/** A summary with p99 too, ms. */
export type Tail = Summary & { p99: number };

/** The p50/p95/max of {@link summary} and the p99 (nearest rank), ms. */
export function tailOf(values: number[]): Tail {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  const p99 = sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)] ?? NaN;
  return { ...summary(values), p99: Math.round(p99 * 10) / 10 };
}

/** One rung of the ladder. */
export interface RateStep {
  /** Requests sent per second. */
  rate_per_s: number;
  sent: number;
  /** Answers that were not what the sender wanted (a claim that went cold, an error): ms NaN. */
  failed: number;
  /** From each request's send to its answer (a failed one counts as never answered). */
  latency_ms: Tail;
  /** Whether `latency_ms.p99` is within the bound and none failed. */
  held: boolean;
}

/** What an open loop sent and heard. */
export interface OpenLoopRun<T> {
  /** Each request's answer, in send order. */
  answers: T[];
  /**
   * How late each request was sent behind its schedule, ms, in send order: the sender's own lag
   * (a busy event loop), not the system's. Large values mean the loop did not send at its rate;
   * a timer may fire a little early, so a value may be slightly below 0.
   */
  late_ms: number[];
  /** From the first send to the last answer, ms. */
  elapsed_ms: number;
}

/**
 * Sends `rate` requests per second for `seconds`, each on its schedule whether or not the ones
 * before have answered, and notes how late each was sent.
 * @param send one request; a rejection rejects the loop (catch in `send` to count it instead)
 * @returns each request's answer, and how late it was sent, in send order
 */
export async function openLoop<T>(
  rate: number,
  seconds: number,
  send: () => Promise<T>,
): Promise<OpenLoopRun<T>> {
  const total = Math.round(rate * seconds);
  const intervalMs = 1000 / rate;
  const startedAtMs = performance.now();
  const pending: Array<Promise<T>> = [];
  const lateMs: number[] = [];
  for (let i = 0; i < total; i++) {
    const dueAtMs = startedAtMs + i * intervalMs;
    const waitMs = dueAtMs - performance.now();
    if (waitMs > 0) await sleep(waitMs);
    lateMs.push(performance.now() - dueAtMs);
    pending.push(send());
  }
  const answers = await Promise.all(pending);
  return { answers, late_ms: lateMs, elapsed_ms: performance.now() - startedAtMs };
}

/**
 * Whether a rung's answers hold the bound: every request answered as wanted, and the p99 within
 * `p99BoundMs`. Pure.
 */
export function stepOf(rate: number, latencies: number[], p99BoundMs: number): RateStep {
  const failed = latencies.filter((ms) => !Number.isFinite(ms)).length;
  // A failed request never got the answer it wanted: it counts as slower than any answer.
  const latency = tailOf(latencies.map((ms) => (Number.isFinite(ms) ? ms : Infinity)));
  return {
    rate_per_s: rate,
    sent: latencies.length,
    failed,
    latency_ms: latency,
    held: failed === 0 && latency.p99 <= p99BoundMs,
  };
}

/** The highest rate of `steps` that was held, 0 when none was. Pure. */
export function highestHeld(steps: RateStep[]): number {
  return Math.max(0, ...steps.filter((s) => s.held).map((s) => s.rate_per_s));
}

/**
 * Climbs `rates` (rising), `seconds` at each, until one is not held.
 * @param before awaited before each rung (e.g. until a warm pool is full again)
 * @returns each rung run, the last one the first not held (if any)
 */
export async function climbRates(options: {
  label: string;
  rates: readonly number[];
  seconds: number;
  p99BoundMs: number;
  send: () => Promise<number>;
  before?: () => Promise<void>;
}): Promise<RateStep[]> {
  const steps: RateStep[] = [];
  for (const rate of options.rates) {
    await options.before?.();
    // A request that rejected never got its answer: NaN, as one that failed.
    const run = await openLoop(rate, options.seconds, () => options.send().catch(() => NaN));
    const step = stepOf(rate, run.answers, options.p99BoundMs);
    steps.push(step);
    console.log(
      `  ${options.label}: ${rate}/s for ${options.seconds} s: p99 ${step.latency_ms.p99} ms, failed ${step.failed}, sent up to ${Math.round(Math.max(0, ...run.late_ms))} ms late: ${step.held ? 'held' : 'not held'}`,
    );
    if (!step.held) break;
  }
  return steps;
}
