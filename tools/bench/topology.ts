/**
 * `npm run bench -- topology`: throughput on the production topology (docs/benchmarks.md,
 * "On the production topology"), in one run:
 *
 *   1. the outcome benchmark (tools/bench/outcomes.ts) on the embedded stack (`npm start`:
 *      dev server, simulated cluster, SQLite, one process);
 *   2. the same benchmark on the production topology (environments/topology: its own
 *      PostgreSQL, the Temporal server tier on it, the real apiserver tier with the node agent
 *      answering 150 ms after a pod is created, two API replicas behind the round-robin proxy,
 *      two workers; the store on PostgreSQL, so every operation update notifies);
 *   3. what the operation notifier's `pg_notify` costs (tools/bench/notify.ts) on that
 *      topology's PostgreSQL once the outcome benchmark is done with it, at the create rates of `BENCH_NOTIFY_CREATES` (default 20, 50, 100
 *      and 200 creates/s: issue 18's open-loop goal is held at 20 creates/s and up).
 *
 * Then prints the two outcome tables side by side (p50 / p95 per run). Peak RSS on the topology
 * is the sum over its API and worker processes (VmHWM; PostgreSQL, Temporal and the apiserver
 * tier not counted).
 */
import { parseTemporalCredentials } from '../../src/config/temporal-connection.js';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { startTopology, type Topology } from '../../environments/topology/index.js';
import { measureNotify } from './notify.js';
import { measureOutcomes, type OutcomeRow } from './outcomes.js';
import { BENCH_SERVICE_ENV, cpuMs, FreshTemplates, memoryMib, type BenchStack } from './support.js';

/**
 * The production topology as a {@link BenchStack} of the outcome benchmark.
 * @param beforeStop runs on the topology once the benchmark is done with it, before it stops
 */
async function startTopologyStack(
  freshTemplates: number,
  beforeStop: (topology: Topology) => Promise<void>,
): Promise<BenchStack> {
  const fresh = new FreshTemplates(freshTemplates);
  const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-bench-topology-'));
  const catalogFile = join(dataDir, 'templates.json');
  writeFileSync(catalogFile, fresh.catalog());
  const startedAtMs = Date.now();
  const topology = await startTopology({
    nodeDelayMs: 150,
    // Every template of the catalog is on the node, 451 MiB like `base`.
    rootfsMib: Object.fromEntries(
      Object.keys(JSON.parse(fresh.catalog())).map((name) => [name, 451]),
    ),
    env: { ...BENCH_SERVICE_ENV, LOG_LEVEL: 'warn', SANDBOX_TEMPLATES: catalogFile },
  }).catch((err: unknown) => {
    rmSync(dataDir, { recursive: true, force: true });
    throw err;
  });
  console.log(`topology ready in ${Math.round((Date.now() - startedAtMs) / 1000)} s`);
  const services = [...topology.apis, ...topology.workers];
  const peaks = new Map<string, number>();
  // A restarted process starts its peak afresh: keep the highest seen per service.
  const samplePeaks = () => {
    for (const service of services) {
      const pid = service.pid();
      if (pid === undefined) continue;
      try {
        peaks.set(service.name, Math.max(peaks.get(service.name) ?? 0, memoryMib(pid, 'VmHWM')));
      } catch {
        // exited between pid() and the read
      }
    }
  };
  const sampler = setInterval(samplePeaks, 1_000);
  sampler.unref();
  return {
    base: topology.url,
    dataDir,
    pid: topology.apis[0]?.pid() ?? -1,
    temporalAddress: topology.temporal.address,
    temporalCredentials: parseTemporalCredentials(
      await topology.temporal.clientEnv('durable-sandbox-bench'),
    ),
    fresh,
    kubeConfig() {
      const kubeConfig = new KubeConfig();
      kubeConfig.loadFromFile(topology.adminKubeconfigPath);
      return kubeConfig;
    },
    // The API and worker processes' CPU (a restarted one counts from its restart).
    cpuMs() {
      return services.reduce((sum, service) => {
        const pid = service.pid();
        return pid === undefined ? sum : sum + cpuMs(pid);
      }, 0);
    },
    peakRssMib() {
      samplePeaks();
      return [...peaks.values()].reduce((sum, mib) => sum + mib, 0);
    },
    async stop() {
      clearInterval(sampler);
      try {
        await beforeStop(topology);
      } finally {
        await topology.stop();
      }
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}

/** The notify bench on the topology's PostgreSQL (a schema of its own in the store's database). */
async function measureNotifyOn(topology: Topology): Promise<Record<string, unknown>> {
  console.log("\nthe operation notifier's pg_notify on the topology's PostgreSQL");
  const before = process.env.BENCH_DATABASE_URL;
  try {
    process.env.BENCH_DATABASE_URL = topology.storeUrl;
    return await measureNotify();
  } finally {
    if (before === undefined) delete process.env.BENCH_DATABASE_URL;
    else process.env.BENCH_DATABASE_URL = before;
  }
}

/** Prints the two outcome tables side by side: p50 / p95 in ms. */
function printSideBySide(embedded: OutcomeRow[], topology: OutcomeRow[]): void {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  console.log(line(['run', 'embedded p50 / p95 ms', 'topology p50 / p95 ms']));
  console.log(line(['---', '---:', '---:']));
  const cell = (row?: OutcomeRow) =>
    row
      ? `${row.stats.p50.toLocaleString('en-US')} / ${row.stats.p95.toLocaleString('en-US')}`
      : '';
  // The throughput rows name their rate: match the rows by position, the label of the embedded.
  embedded.forEach((row, i) => console.log(line([row.run, cell(row), cell(topology[i])])));
}

/**
 * Runs the three measurements (embedded, topology, notify) and prints the comparison.
 * @param quick the outcome benchmark's `--quick` counts (the notify bench reads its own
 *   BENCH_NOTIFY_* variables)
 * @returns both outcome results and the notify result, for the results file
 */
export async function measureTopologyThroughput(quick: boolean): Promise<Record<string, unknown>> {
  const startedAtMs = Date.now();
  console.log('outcomes on the embedded stack');
  const embedded = await measureOutcomes(quick);
  console.log('\noutcomes on the production topology');
  let notify: Record<string, unknown> | undefined;
  const topology = await measureOutcomes(quick, (freshTemplates) =>
    startTopologyStack(freshTemplates, async (running) => {
      notify = await measureNotifyOn(running);
    }),
  );
  console.log('');
  printSideBySide(embedded.rows as OutcomeRow[], topology.rows as OutcomeRow[]);
  const line = (label: string, r: Record<string, unknown>) =>
    `${label}: ${String(r.successThroughputPerS)} creates/s, GET at ${String(r.getRatePerS)}/s, peak RSS ${String(r.peakRssMib)} MiB`;
  console.log(`\n${line('embedded', embedded)}\n${line('topology', topology)}`);
  const minutes = Math.round((Date.now() - startedAtMs) / 6_000) / 10;
  console.log(`the run took ${minutes} min`);
  return { embedded, topology, notify, minutes };
}
