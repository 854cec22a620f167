/**
 * `npm run bench -- shapes`: what each element of a refused create's Temporal shape costs in CPU
 * (issue 34; docs/benchmarks.md, "shapes"). Servers of its own: a Temporal dev server in memory
 * (environments/dev-server/dev-server.ts, eager activity dispatch on, as the stack's) and the
 * floors' worker and client in the bench's process (tools/bench/outcomes.ts). No API, store or
 * cluster: every step is a no-op.
 *
 * Each round runs, `atOnce` at once, each floor of tools/bench/floor-workflows.ts: the refusal's
 * whole shape (3 activities, 2 local activities, the deadline timer, 3 upserts; no patch marker
 * since the patches were retired, docs/testing.md "Patch exit plan"), the same without its local
 * activities, without its upserts, without its timer, its 3 activities alone, and the
 * one-failing-activity floor; figure: the bench process's CPU per workflow
 * (tools/bench/floor-cpu.ts). The difference between two rows is what the element costs.
 */
import { loadavg } from 'node:os';
import { startDevServer } from '../../environments/dev-server/dev-server.js';
import { floorCpuMsPerWorkflow } from './floor-cpu.js';
import { startFloors } from './outcomes.js';

/** The floors measured, in this order each round. */
const SHAPES = [
  'floorRefusalShape',
  'floorRefusalShapeNoLocalActivities',
  'floorRefusalShapeNoUpserts',
  'floorRefusalShapeNoTimer',
  'floorRefusalShapeActivitiesOnly',
  'floorOneFailingActivity',
] as const;

/** Workflows at once per floor and rounds (`--quick`: a trial). */
const SIZES = { full: { atOnce: 100, rounds: 3 }, quick: { atOnce: 20, rounds: 1 } } as const;

/**
 * Runs the shapes mode.
 * @returns per floor, its CPU per workflow of each round in ms, and the load average around
 * @throws the dev server's or the SDK's errors when either cannot start
 */
export async function measureShapes(quick: boolean): Promise<Record<string, unknown>> {
  const { atOnce, rounds } = quick ? SIZES.quick : SIZES.full;
  const loadBefore = loadavg().map((v) => Math.round(v * 10) / 10);
  const devServer = await startDevServer({ ui: false });
  const floors = await startFloors(devServer.address);
  try {
    const cpuMsPerWorkflow: Record<string, number[]> = {};
    for (let round = 0; round < rounds; round++) {
      for (const shape of SHAPES) {
        const ms = await floorCpuMsPerWorkflow(atOnce, () => floors.run(shape));
        (cpuMsPerWorkflow[shape] ??= []).push(ms);
        console.log(`  round ${round + 1}: ${shape}, ${atOnce} at once: ${ms} ms CPU per workflow`);
      }
    }
    const loadAfter = loadavg().map((v) => Math.round(v * 10) / 10);
    console.log(`\nCPU per workflow (worker + client, one process), ${atOnce} at once, ms:`);
    for (const [shape, values] of Object.entries(cpuMsPerWorkflow))
      console.log(`  ${shape.padEnd(36)} ${values.join(' / ')}`);
    return {
      at_once: atOnce,
      rounds,
      cpu_ms_per_workflow: cpuMsPerWorkflow,
      load_average: { before: loadBefore, after: loadAfter },
    };
  } finally {
    await floors.stop();
    await devServer.stop();
  }
}
