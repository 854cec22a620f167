/**
 * `npm run bench -- noisy`: the noisy neighbour (docs/benchmarks.md, "Noisy neighbour: `noisy`";
 * docs/api.md, "Tenant limits"), the baseline beside this checkout. For each checkout, servers of
 * its own: a Temporal dev server, a simulated cluster, and the checkout's `src/api/main.ts` and
 * `src/worker/main.ts` as child processes on a SQLite store, with two tenants: `flooder` (tenant A,
 * limited by TENANT_LIMITS to {@link FLOODER_LIMITS}) and `neighbour` (tenant B, the bench's
 * roomy default, BENCH_TENANT_LIMITS).
 * A checkout without tenant limits (the baseline) ignores TENANT_LIMITS.
 *
 * 1. alone: B makes synchronous creates (`POST /sync/v1/sandboxes`), one at a time, deleting
 *    each sandbox once it runs (a well-behaved tenant, within any limit);
 * 2. flood: A sends `POST /v1/sandboxes` open loop at {@link FLOOD_RATE}/s for 20 s (`--quick`:
 *    5 s; 1,000 creates) while B makes synchronous creates one at a time, as in 1.
 *
 * Each checkout runs three rows ({@link ROWS}): `defaults`, no TENANT_LIMITS at all (what a fresh
 * install does, issue 47); `limited`, A limited by TENANT_LIMITS as an operator would (issue
 * 29); `roomy`, limits so high nothing is refused, so the row shows what Temporal's fairness
 * alone gives B.
 *
 * Goals of `defaults` and `limited`: B's p95 during the flood ≤ 1.5× its p95 alone; A's excess
 * answered 429, each with Retry-After; none of A's or B's answers 5xx; every B create 201. A
 * missed goal of the candidate is a problem (exit 1); the baseline's, and `roomy`'s, are figures.
 */
import { loadavg } from 'node:os';
import { checkoutsOfRun, type Checkout } from './checkouts.js';
import { ProcessRig } from './process-rig.js';
import {
  BENCH_TENANT_LIMITS,
  errorText,
  problems,
  sleep,
  summary,
  type Summary,
} from './support.js';

const NAMESPACE = 'sandboxes';
/** The simulated node's answer delay, as the embedded stack's default. */
const NODE_DELAY_MS = 300;
/** Tenant A's creates a second during the flood (the 50/s). */
const FLOOD_RATE = 50;
/** How long the flood lasts, s (the 20; `--quick` 5). */
const FLOOD_SECONDS = { full: 20, quick: 5 } as const;
/** B's synchronous creates alone (`--quick`: a trial). */
const ALONE_CREATES = { full: 30, quick: 5 } as const;
/** Tenant A's limits in the run (TENANT_LIMITS), as an operator of a shared installation sets them. */
const FLOODER_LIMITS = { sandboxes: 100, creates_per_second: 5, create_burst: 10 };
/** p95 during the flood over p95 alone, at most (the goal). */
const P95_RATIO_GOAL = 1.5;

const TENANTS = {
  flooder: { id: 'flooder', token: 'bench-token-flooder' },
  neighbour: { id: 'neighbour', token: 'bench-token-neighbour' },
} as const;

const BODY = JSON.stringify({
  template: 'base',
  resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
});

/** The rows of a checkout: which limits its API and worker run with. */
const ROWS = {
  /** No TENANT_LIMITS: the service's built-in defaults for both tenants. */
  defaults: { limits: undefined, goals: true },
  /** A limited by TENANT_LIMITS ({@link FLOODER_LIMITS}), B roomy. */
  limited: {
    limits: { default: BENCH_TENANT_LIMITS, tenants: { flooder: FLOODER_LIMITS } },
    goals: true,
  },
  /** Both roomy: nothing refused; what fairness alone gives. */
  roomy: { limits: { default: BENCH_TENANT_LIMITS }, goals: false },
} as const;
type RowName = keyof typeof ROWS;

/** One checkout's figures. */
export interface NoisyFigures {
  row: RowName;
  flood_rate_per_s: number;
  flood_seconds: number;
  /** A's limits: TENANT_LIMITS' entry, or the row's name (`defaults`, `roomy`). */
  flooder_limits: typeof FLOODER_LIMITS | RowName;
  /** B's synchronous creates alone and during the flood, POST to 201 (ms). */
  neighbour_alone_ms: Summary;
  neighbour_during_flood_ms: Summary;
  p95_ratio: number;
  /** Answers by HTTP status. */
  neighbour_statuses: Record<string, number>;
  flooder_statuses: Record<string, number>;
  /** A's 429 answers without a Retry-After header (0 is the goal). */
  flooder_429_without_retry_after: number;
  goal_met: { p95: boolean; flooder_excess_429: boolean; no_5xx: boolean };
  load_average: { before: number[]; after: number[] };
}

/**
 * Runs the noisy mode for every checkout of the run (baseline first).
 * @returns each checkout's {@link NoisyFigures}; a candidate's missed goal goes to `problems`
 */
export async function measureNoisyNeighbour(quick: boolean): Promise<Record<string, unknown>> {
  const results: Record<string, NoisyFigures | { error: string }> = {};
  const rows = (process.env.NOISY_ROWS?.split(',') ?? Object.keys(ROWS)) as RowName[];
  // Rows outside, checkouts inside: each row's baseline and candidate run back to back.
  for (const row of rows) {
    for (const checkout of checkoutsOfRun()) {
      const label = `${row}/${checkout.label}`;
      try {
        const figures = await measureCheckout(checkout, row, quick);
        results[label] = figures;
        print(label, figures);
        const missed = Object.entries(figures.goal_met).filter(([, met]) => !met);
        if (checkout.label === 'candidate' && ROWS[row].goals && missed.length > 0)
          problems.push(`noisy: ${label} missed ${missed.map(([name]) => name).join(', ')}`);
      } catch (err) {
        problems.push(`noisy: ${label}: ${errorText(err)}`);
        results[label] = { error: errorText(err) };
      }
    }
  }
  return { noisy: results };
}

function print(label: string, figures: NoisyFigures): void {
  console.log(`\nnoisy neighbour, ${label}:`);
  for (const [name, value] of Object.entries(figures))
    console.log(`  ${name.padEnd(28)} ${JSON.stringify(value)}`);
}

async function measureCheckout(
  checkout: Checkout,
  row: RowName,
  quick: boolean,
): Promise<NoisyFigures> {
  const loadBefore = loadavg().map((v) => Math.round(v * 10) / 10);
  const rig = await Rig.start(checkout, row);
  try {
    const neighbourStatuses: Record<string, number> = {};
    const flooderStatuses: Record<string, number> = {};
    let withoutRetryAfter = 0;
    const syncCreate = async (): Promise<number> => {
      const startedAtMs = performance.now();
      const response = await rig.post('/sync/v1/sandboxes', TENANTS.neighbour.token);
      const body = (await response.json().catch(() => ({}))) as { id?: string };
      const elapsed = performance.now() - startedAtMs;
      neighbourStatuses[response.status] = (neighbourStatuses[response.status] ?? 0) + 1;
      // B stays within its own limits: its sandbox goes once it ran (not timed).
      if (response.status === 201 && body.id) await rig.delete(body.id, TENANTS.neighbour.token);
      return elapsed;
    };
    console.log(`noisy: ${checkout.label}: servers up; B alone`);
    await syncCreate(); // warm-up
    delete neighbourStatuses['201'];
    const alone: number[] = [];
    for (let i = 0; i < ALONE_CREATES[quick ? 'quick' : 'full']; i++)
      alone.push(await syncCreate());

    const seconds = FLOOD_SECONDS[quick ? 'quick' : 'full'];
    console.log(`noisy: ${checkout.label}: A floods ${FLOOD_RATE}/s for ${seconds} s`);
    const flood = rig.flood(seconds, (status, retryAfter) => {
      flooderStatuses[status] = (flooderStatuses[status] ?? 0) + 1;
      if (status === 429 && !retryAfter) withoutRetryAfter += 1;
    });
    const during: number[] = [];
    let flooding = true;
    void flood.finally(() => (flooding = false));
    while (flooding) during.push(await syncCreate());
    await flood;

    const aloneSummary = summary(alone);
    const duringSummary = summary(during);
    const ratio = Math.round((duringSummary.p95 / aloneSummary.p95) * 100) / 100;
    const fiveHundreds = [neighbourStatuses, flooderStatuses].some((statuses) =>
      Object.keys(statuses).some((status) => Number(status) >= 500 || Number(status) === 0),
    );
    return {
      row,
      flood_rate_per_s: FLOOD_RATE,
      flood_seconds: seconds,
      flooder_limits: row === 'limited' ? FLOODER_LIMITS : row,
      neighbour_alone_ms: aloneSummary,
      neighbour_during_flood_ms: duringSummary,
      p95_ratio: ratio,
      neighbour_statuses: neighbourStatuses,
      flooder_statuses: flooderStatuses,
      flooder_429_without_retry_after: withoutRetryAfter,
      goal_met: {
        p95: ratio <= P95_RATIO_GOAL && Object.keys(neighbourStatuses).every((s) => s === '201'),
        flooder_excess_429: (flooderStatuses['429'] ?? 0) > 0 && withoutRetryAfter === 0,
        no_5xx: !fiveHundreds,
      },
      load_average: { before: loadBefore, after: loadavg().map((v) => Math.round(v * 10) / 10) },
    };
  } finally {
    await rig.stop();
  }
}

/** One checkout's rig (tools/bench/process-rig.ts) and the two tenants' requests on it. */
class Rig {
  private constructor(private readonly rig: ProcessRig) {}

  static async start(checkout: Checkout, row: RowName): Promise<Rig> {
    const limits = ROWS[row].limits;
    return new Rig(
      await ProcessRig.start({
        label: `noisy-${row}-${checkout.label}`,
        checkout,
        cluster: { startupDelayMs: NODE_DELAY_MS },
        namespace: NAMESPACE,
        env: {
          API_TOKENS: Object.values(TENANTS)
            .map(({ id, token }) => `${id}:${token}`)
            .join(','),
          ...(limits && { TENANT_LIMITS: JSON.stringify(limits) }),
        },
        withoutEnv: limits ? [] : ['TENANT_LIMITS'],
      }),
    );
  }

  /** Deletes a sandbox; the answer is read and dropped (a failure shows in the next create). */
  async delete(id: string, token: string): Promise<void> {
    await fetch(`${this.base}/v1/sandboxes/${id}`, {
      method: 'DELETE',
      headers: { Authorization: `Bearer ${token}` },
    })
      .then((response) => response.text())
      .catch(() => undefined);
  }

  get base(): string {
    return this.rig.base;
  }

  stop(): Promise<void> {
    return this.rig.stop();
  }

  post(path: string, token: string): Promise<Response> {
    return fetch(`${this.base}${path}`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
      body: BODY,
    }).catch(() => new Response(null, { status: 599 }));
  }

  /**
   * Tenant A's open loop: create n is sent at n / FLOOD_RATE s whatever the answers before it.
   * @param onStatus each answer's HTTP status (0 when the request failed) and its Retry-After
   */
  async flood(
    seconds: number,
    onStatus: (status: number, retryAfter: string | null) => void,
  ): Promise<void> {
    const started = performance.now();
    const sent: Array<Promise<void>> = [];
    for (let n = 0; n < seconds * FLOOD_RATE; n++) {
      const due = started + (n * 1000) / FLOOD_RATE;
      const wait = due - performance.now();
      if (wait > 0) await sleep(wait);
      sent.push(
        this.post('/v1/sandboxes', TENANTS.flooder.token).then(async (response) => {
          await response.text().catch(() => undefined);
          onStatus(
            response.status === 599 ? 0 : response.status,
            response.headers.get('retry-after'),
          );
        }),
      );
    }
    await Promise.all(sent);
  }
}
