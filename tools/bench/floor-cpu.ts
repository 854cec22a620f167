/**
 * The CPU a floor costs per workflow (issue 34): the floors' worker and client run in the bench's
 * own process (tools/bench/outcomes.ts, `startFloors`), so the bench's CPU time around a burst
 * of floor workflows, with nothing else working in it, is the floor's CPU.
 */
import { atOnce, sleep } from './support.js';

/** The bench process's CPU time so far (user + system), in ms. */
function usedMs(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
}

/**
 * The CPU the bench's own process (user + system) spends per workflow on `n` runs of `run` at
 * once, less its idle rate over 3 s before them, in ms (0.1 ms steps). Only the floors' worker
 * and client work in the bench's process meanwhile, so this is a floor's CPU per workflow.
 */
export async function floorCpuMsPerWorkflow(
  n: number,
  run: () => Promise<unknown>,
): Promise<number> {
  await run();
  const idleFromMs = performance.now();
  const idleFrom = usedMs();
  await sleep(3_000);
  const idlePerMs = (usedMs() - idleFrom) / (performance.now() - idleFromMs);
  const fromMs = performance.now();
  const from = usedMs();
  await atOnce(n, run);
  const burstMs = usedMs() - from - idlePerMs * (performance.now() - fromMs);
  return Math.round((burstMs / n) * 10) / 10;
}
