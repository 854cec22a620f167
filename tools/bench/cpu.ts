/**
 * `npm run bench -- cpu`: CPU per operation, beside the floor of each operation's Temporal shape
 * (docs/benchmarks.md, "CPU per operation"; issue 50). For each checkout of the run (the
 * baseline at BASELINE_DIR, then this one; tools/bench/checkouts.ts), in one run:
 *
 * 1. the embedded stack (`tools/start.ts`, one process: API, worker and simulated cluster) on
 *    its own dev server: the stack process's CPU per operation;
 * 2. the production shape (tools/bench/process-rig.ts: `src/api/main.ts` and
 *    `src/worker/main.ts` as two processes, the simulated cluster in the bench's process): the
 *    API's, the worker's and the Temporal dev server's CPU per operation (its process tree,
 *    from /proc);
 * 3. on that same dev server, the no-op workflow of each operation's shape
 *    (tools/bench/floor-workflows.ts, worker and client in the bench's process): its CPU per
 *    workflow, and the dev server's.
 *
 * The operations (tools/bench/cpu-operations.ts), `atOnce` at once each: a cold create that
 * succeeds, a refused create, a warm claim (its pool's refill included), a delete, and an
 * expiry (`expiries` sandboxes with one `expire_time`). CPU per operation: each process's CPU
 * over the burst less its idle rate (tools/bench/floor-cpu.ts). Printed as one table per
 * checkout (tools/bench/cpu-table.ts), with the burst figures beside it: refused creates at
 * once (p95), and the last expired sandbox deleted beside `expiries` no-op delete-shaped
 * workflows from one instant. Warm claims at 50/s: `npm run bench -- pool`.
 */
import { loadavg } from 'node:os';
import { KubeConfig } from '@kubernetes/client-node';
import { checkoutsOfRun, type Checkout } from './checkouts.js';
import {
  cpuCatalog,
  CPU_NAMESPACE,
  measureOperations,
  type CpuTarget,
  type OperationFigures,
} from './cpu-operations.js';
import { CPU_OPERATIONS, cpuTable, FLOOR_OF, type CpuOperation, type CpuRow } from './cpu-table.js';
import { benchProcessCpu, cpuMsPerOperation } from './floor-cpu.js';
import { startFloors } from './outcomes.js';
import { ProcessRig } from './process-rig.js';
import {
  atOnce,
  cpuMs,
  errorText,
  FreshTemplates,
  problems,
  startStack,
  summary,
  treeCpuMs,
  type Summary,
} from './support.js';

/** Operations at once, and sandboxes sharing one expire_time (`--quick`: a trial). */
const SIZES = { full: { atOnce: 100, expiries: 1_000 }, quick: { atOnce: 10, expiries: 20 } };
/** The simulated node's answer delay, as `split`'s (SIMULATED_NODE_DELAY_MS). */
const NODE_DELAY_MS = 150;

type Figures = Partial<Record<CpuOperation, OperationFigures>>;

/** One checkout's figures. */
interface CheckoutFigures {
  label: string;
  stack: Figures;
  split: Figures;
  floors: Figures;
  /** `expiries` no-op delete-shaped workflows started at once: ms to each one's end. */
  floor_deletes_at_once_ms?: Summary;
  table: string[];
}

/** The fresh templates of one target's refusals: the warm-up's, the burst's, and 4 to spare. */
function freshTemplatesFor(sizes: { atOnce: number }): FreshTemplates {
  return new FreshTemplates(sizes.atOnce + 5);
}

/** The embedded stack of `checkout`: the stack process's and its dev server's CPU. */
async function measureStack(checkout: Checkout, sizes: typeof SIZES.quick): Promise<Figures> {
  const fresh = freshTemplatesFor(sizes);
  const poolSize = sizes.atOnce + 2;
  const stack = await startStack({
    checkoutDir: checkout.dir,
    env: {
      SANDBOX_TEMPLATES: cpuCatalog(fresh, poolSize),
      SIMULATED_NODE_DELAY_MS: String(NODE_DELAY_MS),
      OTEL_TRACES_EXPORTER: 'none',
    },
  });
  try {
    console.log(`cpu: ${checkout.label}: the embedded stack up (pid ${stack.pid})`);
    const target: CpuTarget = {
      label: `${checkout.label} stack`,
      base: stack.base,
      kubeConfig: stack.kubeConfig(),
      meters: { stack: () => cpuMs(stack.pid), temporal: () => treeCpuMs(stack.pid, 'temporal') },
      fresh,
      poolSize,
    };
    return await measureOperations(target, sizes.atOnce, sizes.expiries);
  } finally {
    await stack.stop();
  }
}

/**
 * The production shape of `checkout`: the API's, the worker's and the dev server's CPU; then the
 * floors on the same dev server.
 */
async function measureSplit(
  checkout: Checkout,
  sizes: typeof SIZES.quick,
): Promise<Pick<CheckoutFigures, 'split' | 'floors' | 'floor_deletes_at_once_ms'>> {
  const fresh = freshTemplatesFor(sizes);
  const poolSize = sizes.atOnce + 2;
  const catalog = cpuCatalog(fresh, poolSize);
  const rootfsMib = Object.fromEntries(
    Object.keys(JSON.parse(catalog) as Record<string, unknown>).map((name) => [name, 451]),
  );
  const rig = await ProcessRig.start({
    label: `cpu-${checkout.label}`,
    checkout,
    cluster: { startupDelayMs: NODE_DELAY_MS, rootfsMib },
    namespace: CPU_NAMESPACE,
    env: { SANDBOX_TEMPLATES: catalog, OTEL_TRACES_EXPORTER: 'none' },
  });
  const temporal = () => treeCpuMs(rig.devServer.pid);
  try {
    const kubeConfig = new KubeConfig();
    kubeConfig.loadFromString(rig.cluster.kubeconfigYaml(CPU_NAMESPACE));
    const target: CpuTarget = {
      label: `${checkout.label} split`,
      base: rig.base,
      kubeConfig,
      meters: {
        api: () => cpuMs(rig.pidOf('src/api/main.ts')),
        worker: () => cpuMs(rig.pidOf('src/worker/main.ts')),
        temporal,
      },
      fresh,
      poolSize,
    };
    const split = await measureOperations(target, sizes.atOnce, sizes.expiries);
    const floors: Figures = {};
    let floorDeletes: Summary | undefined;
    const worker = await startFloors(rig.devServer.address);
    try {
      for (const operation of CPU_OPERATIONS) {
        const n = operation === 'expiry' ? sizes.expiries : sizes.atOnce;
        const run = () => worker.run(FLOOR_OF[operation]);
        await run();
        const latencies: number[] = [];
        const cpu = await cpuMsPerOperation(
          n,
          { floor: benchProcessCpu, floorTemporal: temporal },
          async () => latencies.push(...(await atOnce(n, run)).map((t) => t.fromStartMs)),
        );
        floors[operation] = { cpu_ms: cpu, latency_ms: summary(latencies) };
        console.log(
          `  ${checkout.label} floor ${FLOOR_OF[operation]}, ${n} at once: ${JSON.stringify(cpu)}`,
        );
      }
      // The expiry's burst beside as many no-op delete-shaped workflows from one instant.
      const runs = await atOnce(sizes.expiries, () => worker.run(FLOOR_OF.delete));
      floorDeletes = summary(runs.map((t) => t.fromStartMs));
    } finally {
      await worker.stop();
    }
    return { split, floors, floor_deletes_at_once_ms: floorDeletes };
  } finally {
    await rig.stop();
  }
}

/** The table's rows from the three parts' figures. */
function rowsOf(f: Pick<CheckoutFigures, 'stack' | 'split' | 'floors'>) {
  const rows: Partial<Record<CpuOperation, CpuRow>> = {};
  for (const operation of CPU_OPERATIONS) {
    const stack = f.stack[operation]?.cpu_ms ?? {};
    const split = f.split[operation]?.cpu_ms ?? {};
    const floor = f.floors[operation]?.cpu_ms ?? {};
    if (!f.stack[operation] && !f.split[operation]) continue;
    rows[operation] = {
      stack: stack.stack ?? NaN,
      api: split.api ?? NaN,
      worker: split.worker ?? NaN,
      temporal: split.temporal ?? NaN,
      floor: floor.floor ?? NaN,
      floorTemporal: floor.floorTemporal ?? NaN,
    };
  }
  return rows;
}

/** The burst figures beside the table. */
function burstLines(f: CheckoutFigures, sizes: typeof SIZES.quick): string[] {
  const refused = f.split.refused_create?.latency_ms;
  const floorRefused = f.floors.refused_create?.latency_ms;
  const expiry = f.split.expiry?.latency_ms;
  return [
    `- ${sizes.atOnce} refused creates at once (API and worker apart), POST -> done: p50 ${refused?.p50} ms, p95 ${refused?.p95} ms (goal p95 <= 2000 ms)`,
    `- ${sizes.atOnce} no-op refusal-shaped workflows at once on the same server, start -> result: p50 ${floorRefused?.p50} ms, p95 ${floorRefused?.p95} ms`,
    `- ${sizes.expiries} sandboxes with one expire_time: the last deleted ${expiry?.max} ms after it; ${sizes.expiries} no-op delete-shaped workflows from one instant: the last done ${f.floor_deletes_at_once_ms?.max} ms after (goal <= 1.5x)`,
    `- the stack's Temporal server, ms CPU/op: ${CPU_OPERATIONS.map((o) => `${o} ${f.stack[o]?.cpu_ms.temporal ?? 'n/a'}`).join(', ')}`,
  ];
}

/**
 * Runs the cpu mode.
 * @returns per checkout, the figures of each part and the printed table; failed checks and
 *   parts that threw go to `problems`
 */
export async function measureCpu(quick: boolean): Promise<Record<string, unknown>> {
  const sizes = quick ? SIZES.quick : SIZES.full;
  const loadBefore = loadavg().map((v) => Math.round(v * 10) / 10);
  const checkouts: CheckoutFigures[] = [];
  for (const checkout of checkoutsOfRun()) {
    const figures: CheckoutFigures = {
      label: checkout.label,
      stack: {},
      split: {},
      floors: {},
      table: [],
    };
    try {
      figures.stack = await measureStack(checkout, sizes);
    } catch (err) {
      problems.push(`cpu: ${checkout.label}: the embedded stack: ${errorText(err)}`);
    }
    try {
      Object.assign(figures, await measureSplit(checkout, sizes));
    } catch (err) {
      problems.push(`cpu: ${checkout.label}: API and worker apart: ${errorText(err)}`);
    }
    figures.table = cpuTable(rowsOf(figures));
    checkouts.push(figures);
  }
  for (const figures of checkouts) {
    console.log(
      `\n${figures.label}: CPU per operation, ms (${sizes.atOnce} at once; expiry ${sizes.expiries}):`,
    );
    for (const line of [...figures.table, '', ...burstLines(figures, sizes)]) console.log(line);
  }
  return {
    sizes,
    checkouts,
    load_average: { before: loadBefore, after: loadavg().map((v) => Math.round(v * 10) / 10) },
  };
}
