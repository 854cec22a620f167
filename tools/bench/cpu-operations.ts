/**
 * The five operations `npm run bench -- cpu` measures (tools/bench/cpu.ts; issue 50), each
 * driven over the API as a user would, `n` at once, on either topology (the embedded stack or
 * the API and worker apart): a cold create that succeeds, a refused create, a warm claim, a
 * delete and an expiry. For each, the CPU per operation of the target's processes
 * (tools/bench/floor-cpu.ts) over a window that opens when the operations are sent and closes
 * when they, and what they leave running (compensation, the pool's refill, the pods' deletes),
 * are done; what each needs first (running sandboxes, a full pool, one `expire_time`) is made
 * before the window, and the expiry's window waits for the processes to be back at rest after
 * its extends (tools/bench/cpu-rest.ts).
 */
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { podNameFor } from '../../src/kubernetes/pod-spec.js';
import { waitUntil } from '../wait-until.js';
import type { CpuOperation } from './cpu-table.js';
import { readRest, untilBackAtRest } from './cpu-rest.js';
import { cpuMsPerOperation, type CpuMeter, type IdleReading } from './floor-cpu.js';
import { readyWarmPods } from './warm-pool-rig.js';
import {
  api,
  atOnce,
  awaitOperation,
  expectRefused,
  FreshTemplates,
  isDone,
  problems,
  sleep,
  summary,
  type Operation,
  type Summary,
} from './support.js';

/** The namespace of every target's sandboxes. */
export const CPU_NAMESPACE = 'sandboxes';
/** The template with a warm pool, and the resources of its pods. */
export const WARM_TEMPLATE = 'warm';
const WARM_RESOURCES = { cpu: 1, memory_mib: 256, disk_mib: 2048 };
/** A cold create: the `base` template with more disk than the pool's, so it never claims. */
const COLD_RESOURCES = { cpu: 1, memory_mib: 256, disk_mib: 4096 };

/** The expiry's sandboxes carry this label, so one list read says whether any still runs. */
const EXPIRY_LABELS = { 'bench-cpu': 'expiry' };
const EXPIRY_SELECTOR = encodeURIComponent('bench-cpu=expiry');

/**
 * The catalog (SANDBOX_TEMPLATES) every target runs with: `base`, `known`, `fresh` templates
 * for refusals, and `warm` with a pool of `poolSize` pods.
 */
export function cpuCatalog(fresh: FreshTemplates, poolSize: number): string {
  const catalog = JSON.parse(fresh.catalog()) as Record<string, unknown>;
  catalog[WARM_TEMPLATE] = {
    image: 'ghcr.io/durable-sandbox/base:1',
    warm_pool: { size: poolSize, resources: WARM_RESOURCES, max_pending: poolSize },
  };
  return JSON.stringify(catalog);
}

/** A topology under measurement. */
export interface CpuTarget {
  /** e.g. `candidate stack`, for messages. */
  label: string;
  /** The API's base URL. */
  base: string;
  /** A client config for its cluster. */
  kubeConfig: KubeConfig;
  /** The processes measured: name -> its CPU meter. */
  meters: Record<string, CpuMeter>;
  fresh: FreshTemplates;
  /** The warm pool's size. */
  poolSize: number;
}

/** One operation's figures: CPU per operation per meter, and latency. */
export interface OperationFigures {
  cpu_ms: Record<string, number>;
  /**
   * Each operation's ms from its request to done (the expiry: expire_time -> none of its
   * sandboxes `running`, read once a second).
   */
  latency_ms: Summary;
}

async function json<T>(response: Response, expected: number, what: string): Promise<T> {
  const text = await response.text();
  if (response.status !== expected)
    throw new Error(`${what} answered ${response.status}: ${text.slice(0, 300)}`);
  return JSON.parse(text) as T;
}

/**
 * Creates a cold sandbox (with `lifetime`'s ttl and labels, if given) and waits for its create
 * to be done. @returns ms and the operation
 */
async function coldCreate(
  base: string,
  lifetime?: { ttl: string; labels: Record<string, string> },
): Promise<{ ms: number; op: Operation }> {
  const startedAtMs = performance.now();
  const body = JSON.stringify({ template: 'base', resources: COLD_RESOURCES, ...lifetime });
  const accepted = await json<Operation>(
    await api(base, '/v1/sandboxes', { method: 'POST', body }),
    202,
    'a cold create',
  );
  const op = await awaitOperation(base, accepted, isDone, { longPoll: true });
  if (op.status !== 'succeeded') problems.push(`cpu: a cold create ended ${op.status}`);
  return { ms: performance.now() - startedAtMs, op };
}

/** The names of the pods in the namespace now. */
async function existingPodNames(kubeConfig: KubeConfig): Promise<Set<string>> {
  const core = kubeConfig.makeApiClient(CoreV1Api);
  const list = await core.listNamespacedPod({ namespace: CPU_NAMESPACE });
  return new Set(list.items.map((p) => p.metadata?.name ?? ''));
}

/** Waits (250 ms apart, up to `timeoutMs`) until none of `podNames` exists. */
async function untilGone(target: CpuTarget, podNames: string[], timeoutMs = 300_000) {
  await waitUntil(
    async () => {
      const names = await existingPodNames(target.kubeConfig);
      return podNames.every((name) => !names.has(name));
    },
    { timeoutMs, intervalMs: 250, what: `${target.label}: ${podNames.length} pods deleted` },
  );
}

/** Waits until the warm pool holds its `poolSize` ready, unclaimed pods ({@link readyWarmPods}). */
export async function untilPoolFull(target: CpuTarget): Promise<void> {
  const ready = () => readyWarmPods(target.kubeConfig, CPU_NAMESPACE, WARM_TEMPLATE);
  await waitUntil(async () => (await ready()) >= target.poolSize, {
    timeoutMs: 300_000,
    intervalMs: 250,
    what: `${target.label}: ${target.poolSize} ready warm pods`,
  });
}

/** A refused create (disk 300 on a fresh template whose rootfs is 451 MiB), done. */
async function refusedCreate(target: CpuTarget): Promise<{ ms: number; op: Operation }> {
  const startedAtMs = performance.now();
  const body = JSON.stringify({
    template: target.fresh.take(),
    resources: { ...COLD_RESOURCES, disk_mib: 300 },
  });
  const accepted = await json<Operation>(
    await api(target.base, '/v1/sandboxes', { method: 'POST', body }),
    202,
    'a refused create',
  );
  const op = await awaitOperation(target.base, accepted, isDone, { longPoll: true });
  expectRefused(op);
  return { ms: performance.now() - startedAtMs, op };
}

/** A warm claim: a synchronous create with the pool's resources. @returns ms */
async function warmClaim(target: CpuTarget): Promise<number> {
  const startedAtMs = performance.now();
  const body = JSON.stringify({ template: WARM_TEMPLATE, resources: WARM_RESOURCES });
  const answer = await json<{ pod?: { name?: string } }>(
    await api(target.base, '/sync/v1/sandboxes', { method: 'POST', body }),
    201,
    'a warm create',
  );
  if (!answer.pod?.name?.startsWith(`warm-${WARM_TEMPLATE}-`))
    problems.push(`cpu: ${target.label}: a warm create ran on ${answer.pod?.name}, not a warm pod`);
  return performance.now() - startedAtMs;
}

/** A delete of a running sandbox, done. @returns ms */
async function deleteSandbox(base: string, sandboxId: string): Promise<number> {
  const startedAtMs = performance.now();
  const accepted = await json<Operation>(
    await api(base, `/v1/sandboxes/${sandboxId}`, { method: 'DELETE' }),
    202,
    'a delete',
  );
  const op = await awaitOperation(base, accepted, isDone, { longPoll: true });
  if (op.status !== 'succeeded') problems.push(`cpu: a delete ended ${op.status}`);
  return performance.now() - startedAtMs;
}

/**
 * Measures one operation: `burst` sends `count` of it and resolves when they are done, pushing
 * their latencies; each meter's idle rate is `idle`'s, or read over the 3 s before the burst.
 */
type Measure = (
  operation: CpuOperation,
  count: number,
  burst: (latencies: number[]) => Promise<unknown>,
  idle?: IdleReading<string>,
) => Promise<void>;

/** How long the CPU may take to settle after the expiry's creates, in ms. */
const CREATES_SETTLE_MS = 60_000;
/** How long before `expire_time` the expiry's window opens, in ms. */
const EXPIRY_WINDOW_LEAD_MS = 1_000;

/**
 * Measures the five operations on `target`, `n` at once each (`expiries` for the expiry), after
 * one of each (but the expiry) to warm up.
 * @returns each operation's figures; an operation that threw is left out (its error in `problems`)
 */
export async function measureOperations(
  target: CpuTarget,
  n: number,
  expiries: number,
): Promise<Partial<Record<CpuOperation, OperationFigures>>> {
  const { base } = target;
  const figures: Partial<Record<CpuOperation, OperationFigures>> = {};
  const measure: Measure = async (operation, count, burst, idle) => {
    try {
      const latencies: number[] = [];
      const cpu = await cpuMsPerOperation(count, target.meters, () => burst(latencies), idle);
      figures[operation] = { cpu_ms: cpu, latency_ms: summary(latencies) };
      console.log(
        `  ${target.label}: ${operation}, ${count} at once: CPU ms/op ${JSON.stringify(cpu)}, latency ${JSON.stringify(figures[operation].latency_ms)}`,
      );
    } catch (err) {
      problems.push(`cpu: ${target.label}: ${operation}: ${String(err)}`);
    }
  };
  await untilPoolFull(target);
  console.log(`  ${target.label}: pool full; warming up`);
  const warmUp = await coldCreate(base);
  await refusedCreate(target);
  await warmClaim(target);
  await deleteSandbox(base, warmUp.op.sandbox_id);
  await untilPoolFull(target);

  const running: string[] = [];
  await measure('cold_create', n, async (latencies) => {
    for (const { ms, op } of await atOnce(n, () => coldCreate(base))) {
      latencies.push(ms);
      running.push(op.sandbox_id);
    }
  });
  await measure('refused_create', n, async (latencies) => {
    const done = await atOnce(n, () => refusedCreate(target));
    latencies.push(...done.map((d) => d.ms));
    // Compensation deletes each refused pod: the window closes when they are gone.
    await untilGone(
      target,
      done.map((d) => podNameFor(d.op.sandbox_id, 1)),
    );
  });
  await measure('warm_claim', n, async (latencies) => {
    latencies.push(...(await atOnce(n, () => warmClaim(target))));
    // The pool's refill is part of what a claim costs.
    await untilPoolFull(target);
  });
  await measure('delete', running.length, async (latencies) => {
    latencies.push(...(await atOnce(running.length, () => deleteSandbox(base, running.shift()!))));
  });
  await measureExpiry(target, expiries, measure);
  return figures;
}

/**
 * Waits until none of the expiry's sandboxes is `running` (a delete's last step marks it
 * deleted), then pushes the ms from `expireAtMs` (epoch ms) to then. One list read a second
 * (about 8 ms of the API's CPU each on a loaded machine), where listing the pods would cost the
 * stack's simulated cluster a page of every pod each time.
 */
async function untilExpired(target: CpuTarget, expireAtMs: number, latencies: number[]) {
  await waitUntil(
    async () => {
      const page = await json<{ sandboxes: unknown[] }>(
        await api(
          target.base,
          `/v1/sandboxes?state=running&limit=1&label_selector=${EXPIRY_SELECTOR}`,
        ),
        200,
        'the running list',
      );
      return page.sandboxes.length === 0;
    },
    {
      timeoutMs: 300_000,
      intervalMs: 1_000,
      what: `${target.label}: every expired sandbox deleted`,
    },
  );
  latencies.push(Date.now() - expireAtMs);
}

/**
 * The expiry: `count` sandboxes created running with a day's ttl; the processes' rest rate read
 * once their CPU has settled after the creates (tools/bench/cpu-rest.ts); every sandbox extended
 * to one `expire_time` (30 s, and 50 ms a sandbox, ahead); the window opens 1 s before it, once
 * the processes are back at rest (the extends' work in the worker and the Temporal server goes on
 * after their answers), and closes when none of them is `running` any more. Each meter's idle
 * rate is the rest rate. Then every pod must be gone and each sandbox read `deleted`.
 */
async function measureExpiry(target: CpuTarget, count: number, measure: Measure): Promise<void> {
  const { base } = target;
  const ids: string[] = [];
  for (let i = 0; i < count; i += 20) {
    const batch = await atOnce(Math.min(20, count - i), () =>
      coldCreate(base, { ttl: '86400s', labels: EXPIRY_LABELS }),
    );
    ids.push(...batch.map((b) => b.op.sandbox_id));
  }
  const { rest, settled } = await readRest(target.meters, Date.now() + CREATES_SETTLE_MS);
  if (!settled)
    problems.push(
      `cpu: ${target.label}: the CPU had not settled ${CREATES_SETTLE_MS} ms after the expiry's creates`,
    );
  const expireAtMs = Date.now() + 30_000 + count * 50;
  const expireTime = new Date(expireAtMs).toISOString();
  for (let i = 0; i < ids.length; i += 20) {
    await Promise.all(
      ids.slice(i, i + 20).map(async (id) => {
        const body = JSON.stringify({ expire_time: expireTime });
        await json(
          await api(base, `/v1/sandboxes/${id}:extend`, { method: 'POST', body }),
          200,
          'an extend',
        );
      }),
    );
  }
  const extendedAtMs = Date.now();
  const opensAtMs = expireAtMs - EXPIRY_WINDOW_LEAD_MS;
  if (await untilBackAtRest(target.meters, rest, opensAtMs)) {
    console.log(
      `  ${target.label}: back at rest ${Date.now() - extendedAtMs} ms after the extends' answers`,
    );
  } else {
    problems.push(
      `cpu: ${target.label}: the extends' work still ran when the expiry's window opened`,
    );
  }
  await sleep(Math.max(0, opensAtMs - Date.now()));
  await measure('expiry', count, (latencies) => untilExpired(target, expireAtMs, latencies), rest);
  // Outside the window: every pod gone, every sandbox `deleted`.
  await untilGone(
    target,
    ids.map((id) => podNameFor(id, 1)),
    30_000,
  );
  const states = await Promise.all(
    ids.map(async (id) => {
      const sandbox = await json<{ state: string }>(
        await api(base, `/v1/sandboxes/${id}`),
        200,
        'a sandbox read',
      );
      return sandbox.state;
    }),
  );
  const notDeleted = states.filter((state) => state !== 'deleted').length;
  if (notDeleted > 0)
    problems.push(`cpu: ${target.label}: ${notDeleted} expired sandboxes not deleted`);
}
