/**
 * `npm run bench -- pool`: a warm pool's claim beside a cold create of the same template and
 * Temporal's one-activity floor, in one run (docs/benchmarks.md, "Warm pools: `pool`";
 * docs/architecture.md, "Warm pools"). Servers of its own: a Temporal dev server (in memory), a
 * simulated cluster whose node answers a new pod 300 ms after it is made (the embedded stack's
 * default), this checkout's API and worker as two processes on a SQLite store, and the floors'
 * worker in this process. The template `warm` has a pool of POOL.size pods (max_pending
 * POOL.maxPending) made with 1 CPU, 256 MiB, 2048 MiB of disk.
 *
 * Measured, each from the moment its request is sent to its answer:
 * - one at a time, alternating: a warm create (`POST /sync/v1/sandboxes` with the pool's
 *   resources -> 201, checked to run on a pod named `warm-warm-…`), a cold one (disk 4096 MiB,
 *   not the pool's -> 201 on the sandbox's own pod), and the floor (start of a workflow with one
 *   no-op activity -> its result);
 * - an open loop of warm creates at RATE per second for the run's seconds (each sent on its
 *   schedule, whether or not the ones before have answered), on a full pool: each answer's
 *   latency, and how many were claimed and how many found the pool empty and went cold.
 */
import { loadavg } from 'node:os';
import { openLoop, tailOf } from './held-rate.js';
import { startFloors } from './outcomes.js';
import { sumOf } from './prometheus.js';
import { api, cpuMs, problems } from './support.js';
import {
  startWarmPoolRig,
  untilPoolFull,
  WARM_NODE_DELAY_MS as NODE_DELAY_MS,
  WARM_RESOURCES as RESOURCES,
  WARM_TEMPLATE as TEMPLATE,
} from './warm-pool-rig.js';

const POOL = { size: 500, maxPending: 100 } as const;

/** One-at-a-time rounds, and the open loop's rate (per s) and seconds (`--quick`: a trial). */
const RUN = {
  full: { rounds: 40, rate: 50, seconds: 30 },
  quick: { rounds: 8, rate: 50, seconds: 5 },
} as const;

/** One synchronous create: ms from the POST to its answer, and whether it claimed a warm pod. */
async function syncCreate(
  base: string,
  diskMib: number,
): Promise<{ ms: number; warm: boolean; status: number }> {
  const body = JSON.stringify({
    template: TEMPLATE,
    resources: { ...RESOURCES, disk_mib: diskMib },
  });
  const startedAtMs = performance.now();
  const response = await api(base, '/sync/v1/sandboxes', { method: 'POST', body });
  const text = await response.text();
  const ms = performance.now() - startedAtMs;
  if (response.status !== 201) {
    problems.push(`sync create answered ${response.status}: ${text.slice(0, 300)}`);
    return { ms: NaN, warm: false, status: response.status };
  }
  const pod = (JSON.parse(text) as { pod?: { name?: string } }).pod?.name ?? '';
  return { ms, warm: pod.startsWith(`warm-${TEMPLATE}-`), status: 201 };
}

/**
 * Runs the pool mode.
 * @returns the figures and the goals; failed checks go to `problems`
 */
export async function measurePool(quick: boolean): Promise<Record<string, unknown>> {
  const run = quick ? RUN.quick : RUN.full;
  const loadBefore = loadavg().map((v) => Math.round(v * 10) / 10);
  const rig = await startWarmPoolRig({
    label: 'pool',
    size: POOL.size,
    maxPending: POOL.maxPending,
  });
  const floors = await startFloors(rig.devServer.address);
  try {
    await untilPoolFull(rig, POOL.size, 300_000);
    console.log(`pool: ${POOL.size} warm pods ready; warming up (one of each)`);
    await syncCreate(rig.base, RESOURCES.disk_mib);
    await syncCreate(rig.base, 4096);
    await floors.run('floorOneActivity');

    const warm: number[] = [];
    const cold: number[] = [];
    const floor: number[] = [];
    for (let round = 0; round < run.rounds; round++) {
      floor.push((await floors.run('floorOneActivity')).fromStartMs);
      const claimed = await syncCreate(rig.base, RESOURCES.disk_mib);
      if (!claimed.warm) problems.push('a warm create one at a time did not claim a warm pod');
      warm.push(claimed.ms);
      const coldRun = await syncCreate(rig.base, 4096);
      if (coldRun.warm) problems.push('a create with other resources claimed a warm pod');
      cold.push(coldRun.ms);
    }
    const oneAtATime = { warm: tailOf(warm), cold: tailOf(cold), floor: tailOf(floor) };
    console.log(`one at a time (ms): ${JSON.stringify(oneAtATime)}`);

    await untilPoolFull(rig, POOL.size, 300_000);
    console.log(`pool: open loop of warm creates at ${run.rate}/s for ${run.seconds} s`);
    const total = run.rate * run.seconds;
    const cpuBefore = {
      api: cpuMs(rig.pidOf('src/api/main.ts')),
      worker: cpuMs(rig.pidOf('src/worker/main.ts')),
    };
    const loop = await openLoop(run.rate, run.seconds, () =>
      syncCreate(rig.base, RESOURCES.disk_mib),
    );
    const results = loop.answers;
    // CPU of each process per create of the loop (the refill's pod creates included).
    const cpuPerCreate = {
      api_ms: Math.round((cpuMs(rig.pidOf('src/api/main.ts')) - cpuBefore.api) / total),
      worker_ms: Math.round((cpuMs(rig.pidOf('src/worker/main.ts')) - cpuBefore.worker) / total),
    };
    const claimedRuns = results.filter((r) => r.warm);
    const claims = sumOf(await rig.workerMetrics(), 'durable_sandbox_warm_pool_claims_total', {
      template: TEMPLATE,
      outcome: 'claimed',
    });
    const openLoopFigures = {
      sent: total,
      rate_per_s: run.rate,
      seconds: run.seconds,
      sending_late_ms_max: Math.round(Math.max(...loop.late_ms)),
      answered_s: Math.round(loop.elapsed_ms / 100) / 10,
      claimed: claimedRuns.length,
      went_cold: results.length - claimedRuns.length,
      warm_ms: tailOf(claimedRuns.map((r) => r.ms)),
      all_ms: tailOf(results.map((r) => r.ms)),
      cpu_per_create: cpuPerCreate,
    };
    console.log(`open loop: ${JSON.stringify(openLoopFigures)}`);
    const goals = {
      warm_p50_vs_floor_p50: ratio(oneAtATime.warm.p50, oneAtATime.floor.p50, 1.5),
      warm_p50_vs_cold_p50: ratio(oneAtATime.warm.p50, oneAtATime.cold.p50, 0.2),
      open_loop_warm_p99_vs_warm_p50: ratio(openLoopFigures.warm_ms.p99, oneAtATime.warm.p50, 4),
    };
    console.log('\ngoals (each figure beside its bound, measured in this run):');
    for (const [name, goal] of Object.entries(goals)) {
      console.log(
        `  ${name.padEnd(34)} ${goal.ratio}x (goal <= ${goal.goal}x): ${goal.met ? 'MET' : 'MISSED'}`,
      );
    }
    return {
      figures: {
        pool: POOL,
        node_delay_ms: NODE_DELAY_MS,
        rounds: run.rounds,
        one_at_a_time_ms: oneAtATime,
        open_loop: openLoopFigures,
        worker_claims_counted: claims,
        goals,
        load_average: { before: loadBefore, after: loadavg().map((v) => Math.round(v * 10) / 10) },
      },
    };
  } finally {
    await floors.stop().catch(() => undefined);
    await rig.stop();
  }
}

function ratio(value: number, base: number, goal: number) {
  const r = Math.round((value / base) * 100) / 100;
  return { ratio: r, goal, met: r <= goal };
}
