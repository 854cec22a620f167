/**
 * When the measured processes are at rest (tools/bench/cpu-operations.ts, the expiry): work the
 * bench sent before a window (the 1,000 extends to one `expire_time`) goes on in the worker and
 * the Temporal server after its requests are answered, and an idle rate read then is the tail of
 * that work, not rest. A reading is at rest against another when its CPU rate is no more than the
 * other's plus a tolerance; the rest rate is read once two 3 s readings in a row agree (the rate
 * stopped falling), and a later window opens only once the processes are back at it.
 */
import { readIdle, type CpuMeter, type IdleReading } from './floor-cpu.js';

/**
 * How far above a rest rate a reading may be and still count as at rest, in CPU ms per wall ms:
 * 10% of the rest rate, and at least 0.01 (10 ms of CPU a second: a node process's idle jitter).
 */
const TOLERANCE = { ofRate: 0.1, leastMsPerMs: 0.01 } as const;

/**
 * Whether every meter's rate in `reading` (CPU ms per wall ms) is at most its rate in `rest`
 * plus {@link TOLERANCE}. A meter that reads NaN in either (its process is gone) holds nothing
 * up: its figure is NaN anyway.
 */
export function isAtRest<K extends string>(reading: IdleReading<K>, rest: IdleReading<K>): boolean {
  return (Object.keys(rest.cpuMs) as K[]).every((name) => {
    const restRate = rest.cpuMs[name] / rest.ms;
    const rate = reading.cpuMs[name] / reading.ms;
    const limit = restRate + Math.max(TOLERANCE.ofRate * restRate, TOLERANCE.leastMsPerMs);
    return !(rate > limit);
  });
}

/** How long each reading of the meters lasts, in ms. */
const READING_MS = 3_000;

/**
 * Reads the meters over 3 s, again and again, until a reading's predecessor is at rest against
 * it ({@link isAtRest}: the rate stopped falling), starting no reading that would end after
 * `deadlineMs` (epoch ms). A backlog worked through at a steady rate reads as rest too: read it
 * where the work before was awaited done (the creates), not merely answered (the extends).
 * @returns that reading, the rest rate; `settled: false` with the last reading at the deadline
 */
export async function readRest<K extends string>(
  meters: Record<K, CpuMeter>,
  deadlineMs: number,
): Promise<{ rest: IdleReading<K>; settled: boolean }> {
  let latest = await readIdle(meters, READING_MS);
  while (Date.now() + READING_MS <= deadlineMs) {
    const previous = latest;
    latest = await readIdle(meters, READING_MS);
    if (isAtRest(previous, latest)) return { rest: latest, settled: true };
  }
  return { rest: latest, settled: false };
}

/**
 * Reads the meters over 3 s, again and again, until a reading is at rest against `rest`
 * ({@link isAtRest}), starting no reading that would end after `deadlineMs` (epoch ms).
 * @returns whether the processes came back to rest by the deadline
 */
export async function untilBackAtRest<K extends string>(
  meters: Record<K, CpuMeter>,
  rest: IdleReading<K>,
  deadlineMs: number,
): Promise<boolean> {
  while (Date.now() + READING_MS <= deadlineMs) {
    if (isAtRest(await readIdle(meters, READING_MS), rest)) return true;
  }
  return false;
}
