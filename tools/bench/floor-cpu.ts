/**
 * The CPU an operation costs (issues 34 and 50): the CPU time each process of interest used
 * around a burst of `n` operations at once, less what it uses idle for as long, per operation.
 * The floors' worker and client run in the bench's own process (tools/bench/outcomes.ts,
 * `startFloors`), so the bench's CPU time around a burst of floor workflows, with nothing else
 * working in it, is the floor's CPU; the product's processes are read from /proc
 * (tools/bench/support.ts, `cpuMs`, `treeCpuMs`).
 */
import { atOnce, sleep } from './support.js';

/** Reads a process's CPU time used so far (user + system), in ms. */
export type CpuMeter = () => number;

/** The bench process's CPU time so far (user + system), in ms. */
export const benchProcessCpu: CpuMeter = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** How long each process's idle rate is read before a burst, in ms. */
const IDLE_MS = 3_000;

/** One meter's readings around a burst: CPU ms used idle over `idleMs`, and over the burst. */
export interface CpuReadings {
  idleCpuMs: number;
  idleMs: number;
  burstCpuMs: number;
  burstMs: number;
}

/**
 * CPU per operation from one meter's readings: the burst's CPU less the idle rate over the
 * burst's wall time, over `n` operations, in ms rounded to 0.1 (NaN when a reading is NaN, e.g.
 * the process is gone). May be negative on a noisy machine: it is printed as measured.
 */
export function perOperationMs(r: CpuReadings, n: number): number {
  const idleRate = r.idleMs > 0 ? r.idleCpuMs / r.idleMs : 0;
  const ms = (r.burstCpuMs - idleRate * r.burstMs) / n;
  return Math.round(ms * 10) / 10;
}

/** Each meter's CPU over a stretch of wall time in which nothing measured was sent. */
export interface IdleReading<K extends string> {
  /** CPU ms each meter used over the reading (NaN: its process is gone). */
  cpuMs: Record<K, number>;
  /** The reading's wall time, in ms. */
  ms: number;
}

/** Reads every meter over `ms` (default 3 s) of wall time. */
export async function readIdle<K extends string>(
  meters: Record<K, CpuMeter>,
  ms = IDLE_MS,
): Promise<IdleReading<K>> {
  const names = Object.keys(meters) as K[];
  const fromMs = performance.now();
  const from = names.map((name) => meters[name]());
  await sleep(ms);
  const to = names.map((name) => meters[name]());
  const cpuMs = {} as Record<K, number>;
  names.forEach((name, i) => (cpuMs[name] = to[i]! - from[i]!));
  return { cpuMs, ms: performance.now() - fromMs };
}

/**
 * Reads every meter around `burst` (which starts `n` operations and resolves when they, and
 * whatever they leave running, are done), less each meter's idle rate: `idle`'s, or one read over
 * the 3 s just before the burst when not given.
 * @returns per meter, its CPU per operation in ms ({@link perOperationMs})
 */
export async function cpuMsPerOperation<K extends string>(
  n: number,
  meters: Record<K, CpuMeter>,
  burst: () => Promise<unknown>,
  idle?: IdleReading<K>,
): Promise<Record<K, number>> {
  const names = Object.keys(meters) as K[];
  const idleReading = idle ?? (await readIdle(meters));
  const read = () => names.map((name) => meters[name]());
  const fromMs = performance.now();
  const from = read();
  await burst();
  const burstMs = performance.now() - fromMs;
  const to = read();
  const result = {} as Record<K, number>;
  names.forEach((name, i) => {
    const readings = {
      idleCpuMs: idleReading.cpuMs[name],
      idleMs: idleReading.ms,
      burstCpuMs: to[i]! - from[i]!,
      burstMs,
    };
    result[name] = perOperationMs(readings, n);
  });
  return result;
}

/**
 * The CPU the bench's own process (user + system) spends per workflow on `n` runs of `run` at
 * once, less its idle rate over 3 s before them, in ms (0.1 ms steps), after one run to warm
 * up. Only the floors' worker and client work in the bench's process meanwhile, so this is a
 * floor's CPU per workflow.
 */
export async function floorCpuMsPerWorkflow(
  n: number,
  run: () => Promise<unknown>,
): Promise<number> {
  await run();
  const { bench } = await cpuMsPerOperation(n, { bench: benchProcessCpu }, () => atOnce(n, run));
  return bench;
}
