/**
 * `npm run bench -- claims`: the highest rate of warm claims held with p99 <= 1 s, beside the
 * rate a no-op workflow of the claim's Temporal shape holds on the same server (issue 50's goal:
 * 50/s with p99 <= 1 s, otherwise a held rate >= 0.8x the floor's; docs/benchmarks.md, "Warm
 * claims: `claims`"). For each checkout of the run (the baseline at BASELINE_DIR and this one, in BENCH_ORDER's order;
 * tools/bench/checkouts.ts): its API and worker as two processes (tools/bench/process-rig.ts) on
 * a SQLite store, a simulated cluster whose node answers a new pod after 300 ms, and a
 * template `warm` (tools/bench/warm-pool-rig.ts) with a pool of 500 pods (the most a pool may hold: the top rung also needs its
 * refill). The ladder (tools/bench/held-rate.ts)
 * sends synchronous creates with the pool's resources (`POST /sync/v1/sandboxes` -> 201 on a
 * `warm-warm-…` pod; one that goes cold or fails counts as not answered), the pool full again
 * before each rung. Then, on the dev server of the checkout measured last, its worker idle, the same ladder of
 * `floorWarmClaimShape` workflows (tools/bench/floor-workflows.ts), started and awaited by the
 * floors' worker in this process.
 */
import { loadavg } from 'node:os';
import { checkoutsOfRun, type Checkout } from './checkouts.js';
import { climbRates, highestHeld, type RateStep } from './held-rate.js';
import { startFloors } from './outcomes.js';
import { api, errorText, problems } from './support.js';
import { startWarmPoolRig, untilPoolFull, WARM_RESOURCES, WARM_TEMPLATE } from './warm-pool-rig.js';
/** The goal's bound on each rung's p99, ms. */
const P99_BOUND_MS = 1_000;
/** The goal's rate, per s, and the share of the floor's held rate a miss must still reach. */
const GOAL_RATE = 50;
const FLOOR_SHARE = 0.8;

/** The ladder's rungs (per s), seconds per rung, and the pool's size (`--quick`: a trial). */
const RUN = {
  full: { rates: [10, 20, 30, 35, 40, 45, 50], seconds: 20, pool: 500, maxPending: 200 },
  quick: { rates: [10, 50], seconds: 3, pool: 150, maxPending: 100 },
} as const;
type Run = (typeof RUN)[keyof typeof RUN];

/**
 * Why a rung's creates failed: per kind (`cold`, or the status and the error `code` of the
 * answer, e.g. `503 unavailable`), how many, and the first answer's message.
 */
type Failures = Record<string, { count: number; message: string }>;

/** Counts one failed create in `failures` under `kind`. */
function countFailure(failures: Failures, kind: string, message: string): void {
  const entry = (failures[kind] ??= { count: 0, message });
  entry.count += 1;
}

/**
 * One synchronous create with the pool's resources: ms to its 201 on a warm pod, else NaN, with
 * why counted in `failures`.
 */
async function warmClaim(base: string, failures: Failures = {}): Promise<number> {
  const startedAtMs = performance.now();
  const response = await api(base, '/sync/v1/sandboxes', {
    method: 'POST',
    body: JSON.stringify({ template: WARM_TEMPLATE, resources: WARM_RESOURCES }),
  });
  const text = await response.text();
  const ms = performance.now() - startedAtMs;
  if (response.status !== 201) {
    let error: { code?: string; message?: string } = {};
    try {
      error = (JSON.parse(text) as { error?: typeof error }).error ?? {};
    } catch {
      // not JSON: the status alone says it
    }
    countFailure(failures, `${response.status} ${error.code ?? ''}`.trim(), error.message ?? text);
    return NaN;
  }
  const pod = (JSON.parse(text) as { pod?: { name?: string } }).pod?.name ?? '';
  if (pod.startsWith(`warm-${WARM_TEMPLATE}-`)) return ms;
  countFailure(failures, 'cold', `ran on ${pod}`);
  return NaN;
}

/** One checkout's ladder, and (for the last checkout) the floor's on its dev server. */
async function climbCheckout(
  checkout: Checkout,
  run: Run,
  withFloor: boolean,
): Promise<{ claims: RateStep[]; floor?: RateStep[] }> {
  const rig = await startWarmPoolRig({
    label: `claims-${checkout.label}`,
    checkout,
    size: run.pool,
    maxPending: run.maxPending,
    env: { OTEL_TRACES_EXPORTER: 'none' },
  });
  try {
    console.log(`claims: ${checkout.label}: filling a pool of ${run.pool}`);
    await untilPoolFull(rig, run.pool);
    await warmClaim(rig.base);
    const failures: Record<number, Failures> = {};
    let rung = 0;
    const claims = await climbRates({
      label: `${checkout.label} warm claims`,
      rates: run.rates,
      seconds: run.seconds,
      p99BoundMs: P99_BOUND_MS,
      send: () => warmClaim(rig.base, (failures[run.rates[rung - 1] ?? 0] ??= {})),
      before: async () => {
        rung += 1;
        await untilPoolFull(rig, run.pool);
      },
    });
    for (const [rate, kinds] of Object.entries(failures)) {
      for (const [kind, { count, message }] of Object.entries(kinds)) {
        console.log(`  ${checkout.label} at ${rate}/s: ${count} failed: ${kind}: ${message}`);
      }
    }
    const withFailures = claims.map((step) => ({
      ...step,
      failures: failures[step.rate_per_s] ?? {},
    }));
    if (!withFloor) return { claims: withFailures };
    const floors = await startFloors(rig.devServer.address);
    try {
      await floors.run('floorWarmClaimShape');
      const floor = await climbRates({
        label: 'floor (floorWarmClaimShape)',
        rates: run.rates,
        seconds: run.seconds,
        p99BoundMs: P99_BOUND_MS,
        send: async () => (await floors.run('floorWarmClaimShape')).fromStartMs,
      });
      return { claims: withFailures, floor };
    } finally {
      await floors.stop().catch(() => undefined);
    }
  } finally {
    await rig.stop();
  }
}

/**
 * Runs the claims mode.
 * @returns per checkout its ladder and held rate, the floor's, and the goal's verdict; a part
 *   that threw goes to `problems`
 */
export async function measureClaims(quick: boolean): Promise<Record<string, unknown>> {
  const run = quick ? RUN.quick : RUN.full;
  const loadBefore = loadavg().map((v) => Math.round(v * 10) / 10);
  const checkouts = checkoutsOfRun();
  const results: Record<string, { steps: RateStep[]; held_per_s: number }> = {};
  let floor: RateStep[] = [];
  for (const [i, checkout] of checkouts.entries()) {
    try {
      const climbed = await climbCheckout(checkout, run, i === checkouts.length - 1);
      results[checkout.label] = { steps: climbed.claims, held_per_s: highestHeld(climbed.claims) };
      floor = climbed.floor ?? floor;
    } catch (err) {
      problems.push(`claims: ${checkout.label}: ${errorText(err)}`);
    }
  }
  const floorHeld = highestHeld(floor);
  console.log(
    `\nwarm claims held with p99 <= ${P99_BOUND_MS} ms (rungs ${run.rates.join(', ')}/s, ${run.seconds} s each):`,
  );
  for (const [label, result] of Object.entries(results)) {
    const top = result.held_per_s;
    const met = top >= GOAL_RATE || (floorHeld > 0 && top >= FLOOR_SHARE * floorHeld);
    console.log(
      `  ${label}: ${top}/s; the floor of its shape ${floorHeld}/s (${floorHeld > 0 ? Math.round((top / floorHeld) * 100) / 100 : 'n/a'}x; goal ${GOAL_RATE}/s or >= ${FLOOR_SHARE}x): ${met ? 'MET' : 'MISSED'}`,
    );
  }
  return {
    run,
    checkouts: results,
    floor: { steps: floor, held_per_s: floorHeld },
    load_average: { before: loadBefore, after: loadavg().map((v) => Math.round(v * 10) / 10) },
  };
}
