/**
 * `npm run bench -- expiry`: many sandboxes reaching the same `expire_time` (docs/benchmarks.md,
 * "Expiry"; issue 31). Servers of its own (tools/bench/process-rig.ts): a Temporal dev server,
 * the simulated cluster in the bench's process, this checkout's `src/api/main.ts` and
 * `src/worker/main.ts` on one SQLite store.
 *
 * First 30 sandboxes expire one at a time, 500 ms apart (each one's lateness, alone). Then
 * `n` sandboxes (1,000; `--quick` 100) are created running with a long `ttl`, then all extended
 * (`:extend`) to one `expire_time` T. Measured from T, as the cluster saw it: when each sandbox's
 * pod DELETE arrived (the simulated apiserver's request log, epoch ms), hence its lateness
 * (p50/p99) and the time to the last pod deleted; and another tenant's `GET /v1/sandboxes/{id}`
 * latency during the expiry, beside the same GET at rest before it. Every sandbox must end
 * `deleted` with its delete's `cause` `expired`, and no pod may be left.
 */
import { loadavg } from 'node:os';
import { DEV_TOKEN } from '../../src/config/index.js';
import { podNameFor } from '../../src/kubernetes/pod-spec.js';
import { ProcessRig } from './process-rig.js';
import { sumOf, type Sample } from './prometheus.js';
import { problems, sleep, summary, type Summary } from './support.js';
import { waitUntil } from '../wait-until.js';

const NAMESPACE = 'sandboxes';
const SIZES = { full: 1_000, quick: 100 } as const;
/** Requests in flight at once while creating and extending. */
const CONCURRENCY = 20;
const OTHER_TOKEN = 'bench-expiry-other-tenant-token';
/** Sandboxes that expire one at a time, before the burst. */
const ALONE = 30;

/** What `expiry` reports. */
interface ExpiryFigures {
  /** Sandboxes expiring one at a time (500 ms apart): expire_time -> pod DELETE, ms. */
  alone_lateness_ms: Summary & { p99: number };
  sandboxes: number;
  /** expire_time -> the sandbox's pod DELETE at the apiserver, ms. */
  lateness_ms: Summary & { p99: number };
  /** expire_time -> the last pod DELETE, ms. */
  last_pod_deleted_ms: number;
  /** Another tenant's GET of its own sandbox: at rest, and during the expiry. */
  other_tenant_get_ms: { at_rest: Summary; during_expiry: Summary };
  /**
   * The worker's workflow cache during the expiry (the SDK's `temporal_sticky_cache_*`
   * counters): workflow tasks that found their workflow cached, and those that replayed it.
   */
  workflow_cache: { hits: number; misses: number };
  load_average: { before: number[]; after: number[] };
}

function p99(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.99 * sorted.length) - 1)] ?? NaN;
}

/** Runs `fn` over `items`, `CONCURRENCY` at a time. */
async function pool<T, R>(items: T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const results: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < items.length) {
        const i = next++;
        results[i] = await fn(items[i]!);
      }
    }),
  );
  return results;
}

/**
 * Runs the expiry mode.
 * @returns {@link ExpiryFigures}; failed checks go to `problems`
 */
export async function measureExpiry(quick: boolean): Promise<Record<string, unknown>> {
  const n = quick ? SIZES.quick : SIZES.full;
  const loadBefore = loadavg().map((v) => Math.round(v * 10) / 10);
  const rig = await ProcessRig.start({
    label: 'expiry',
    cluster: { startupDelayMs: 50, rootfsMib: { base: 451 } },
    namespace: NAMESPACE,
    env: {
      API_TOKENS: `dev:${DEV_TOKEN},other:${OTHER_TOKEN}`,
      OTEL_TRACES_EXPORTER: 'none',
    },
  });
  const call = async (token: string, method: string, path: string, body?: unknown) => {
    const response = await fetch(`${rig.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    return { status: response.status, json: (await response.json()) as Record<string, unknown> };
  };
  const runningSandbox = async (token: string): Promise<Record<string, unknown>> => {
    const created = await call(token, 'POST', '/v1/sandboxes', {
      template: 'base',
      resources: { cpu: 1, memory_mib: 256, disk_mib: 2048 },
      ttl: '86400s',
    });
    if (created.status !== 202) throw new Error(`POST answered ${created.status}`);
    // A long-poll answers at each change: ask again until the create is done.
    let op = created;
    for (let i = 0; i < 20 && op.json.done !== true; i++) {
      op = await call(token, 'GET', `/v1/operations/${String(created.json.id)}?wait=30s`);
    }
    if (op.json.status !== 'succeeded') throw new Error(`create ended ${String(op.json.status)}`);
    return created.json;
  };
  try {
    console.log(`expiry: servers up; creating ${n} running sandboxes`);
    const createdAtMs = performance.now();
    const ids = (await pool([...Array(n).keys()], () => runningSandbox(DEV_TOKEN))).map((op) =>
      String(op.sandbox_id),
    );
    console.log(`  ${n} running in ${Math.round(performance.now() - createdAtMs)} ms`);
    const other = String((await runningSandbox(OTHER_TOKEN)).sandbox_id);
    const otherGet = async (): Promise<number> => {
      const startedAtMs = performance.now();
      const { status } = await call(OTHER_TOKEN, 'GET', `/v1/sandboxes/${other}`);
      if (status !== 200) problems.push(`expiry: other tenant's GET answered ${status}`);
      return performance.now() - startedAtMs;
    };
    const atRest: number[] = [];
    for (let i = 0; i < 50; i++) {
      atRest.push(await otherGet());
      await sleep(20);
    }
    // Alone: sandboxes expiring one at a time, 500 ms apart, each timed to its own pod DELETE.
    const alone = await pool([...Array(ALONE).keys()], () => runningSandbox(DEV_TOKEN));
    const aloneFromMs = Date.now() + 5_000;
    /** Pod name -> the expire_time its sandbox was given (epoch ms). */
    const aloneAt = new Map<string, number>();
    for (const [i, op] of alone.entries()) {
      const sandboxId = String(op.sandbox_id);
      const atMs = aloneFromMs + i * 500;
      aloneAt.set(podNameFor(sandboxId, 1), atMs);
      const { status } = await call(DEV_TOKEN, 'POST', `/v1/sandboxes/${sandboxId}:extend`, {
        expire_time: new Date(atMs).toISOString(),
      });
      if (status !== 200) problems.push(`expiry: extend of ${sandboxId} answered ${status}`);
    }
    const aloneDeletes = () =>
      rig.cluster.requestsWhere({
        verb: 'delete',
        resource: 'pods',
        namespace: NAMESPACE,
        name: [...aloneAt.keys()],
      });
    await waitUntil(async () => aloneDeletes().length >= ALONE, {
      timeoutMs: 120_000,
      intervalMs: 200,
      what: 'the lone expiries',
    }).catch((err: unknown) => problems.push(`expiry: ${String(err)}`));
    const aloneLateness = aloneDeletes().map((r) => r.at - aloneAt.get(r.name!)!);
    console.log(`  ${ALONE} expiring alone: lateness ${JSON.stringify(summary(aloneLateness))}`);

    // One expire_time for all, far enough ahead for every extend to land first.
    const expireAtMs = Date.now() + 10_000 + n * 30;
    const expireTime = new Date(expireAtMs).toISOString();
    await pool(ids, async (id) => {
      const { status } = await call(DEV_TOKEN, 'POST', `/v1/sandboxes/${id}:extend`, {
        expire_time: expireTime,
      });
      if (status !== 200) problems.push(`expiry: extend of ${id} answered ${status}`);
    });
    if (Date.now() >= expireAtMs) problems.push('expiry: the extends ended after expire_time');
    console.log(`  all extended to ${expireTime}; waiting`);
    await sleep(Math.max(0, expireAtMs - Date.now() - 500));
    const during: number[] = [];
    const podDeletes = () =>
      rig.cluster.requestsWhere({ verb: 'delete', resource: 'pods', namespace: NAMESPACE });
    const before = podDeletes().length;
    const cacheBefore = await rig.workerMetrics();
    let done = false;
    const sampling = (async () => {
      while (!done) {
        during.push(await otherGet());
        await sleep(50);
      }
    })();
    await waitUntil(async () => podDeletes().length - before >= n, {
      timeoutMs: 300_000,
      intervalMs: 200,
      what: 'every pod deleted',
    }).catch((err: unknown) => problems.push(`expiry: ${String(err)}`));
    done = true;
    await sampling;
    const cacheAfter = await rig.workerMetrics();
    const lateness = podDeletes()
      .slice(before)
      .map((r) => r.at - expireAtMs);
    if (lateness.some((ms) => ms < 0)) problems.push('expiry: a pod was deleted before its time');
    // Every sandbox deleted, and by its expiry.
    await waitUntil(
      async () => {
        const page = await call(DEV_TOKEN, 'GET', '/v1/sandboxes?state=running&limit=1');
        return (page.json.sandboxes as unknown[]).length === 0;
      },
      { timeoutMs: 120_000, intervalMs: 200, what: 'every sandbox deleted' },
    ).catch((err: unknown) => problems.push(`expiry: ${String(err)}`));
    const ops = await call(DEV_TOKEN, 'GET', '/v1/operations?limit=200');
    const deletes = (ops.json.operations as Array<Record<string, unknown>>).filter(
      (op) => op.type === 'sandbox.delete',
    );
    if (deletes.some((op) => op.cause !== 'expired'))
      problems.push('expiry: a delete without cause expired');
    const figures: ExpiryFigures = {
      alone_lateness_ms: { ...summary(aloneLateness), p99: Math.round(p99(aloneLateness)) },
      sandboxes: n,
      lateness_ms: { ...summary(lateness), p99: Math.round(p99(lateness)) },
      last_pod_deleted_ms: Math.max(...lateness),
      other_tenant_get_ms: { at_rest: summary(atRest), during_expiry: summary(during) },
      workflow_cache: {
        hits: stickyCache(cacheAfter, 'hit') - stickyCache(cacheBefore, 'hit'),
        misses: stickyCache(cacheAfter, 'miss') - stickyCache(cacheBefore, 'miss'),
      },
      load_average: { before: loadBefore, after: loadavg().map((v) => Math.round(v * 10) / 10) },
    };
    console.log(`\n${n} sandboxes with one expire_time:`);
    for (const [name, value] of Object.entries(figures))
      console.log(`  ${name.padEnd(22)} ${JSON.stringify(value)}`);
    return { figures };
  } finally {
    await rig.stop();
  }
}

/** The SDK's sticky cache counter `temporal_sticky_cache_<kind>` (with or without `_total`). */
function stickyCache(samples: Sample[], kind: 'hit' | 'miss'): number {
  return (
    sumOf(samples, `temporal_sticky_cache_${kind}`) +
    sumOf(samples, `temporal_sticky_cache_${kind}_total`)
  );
}
