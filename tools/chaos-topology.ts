/**
 * `npm run chaos -- --topology`: the fault matrix on the production topology
 * (environments/topology/fault-matrix.ts; docs/production.md, "Fault matrix"). Starts the
 * topology (node agent delay 1.5 s, so creates wait long enough to be hit), runs every scenario,
 * prints the table and stops everything. Exit code 1 unless every row is perfect.
 *
 * Flags (with --topology): `--quick` (×2 instead of ×5), `--only <scenario>` (e.g.
 * `postgres-outage`).
 */
import { startTopology } from '../environments/topology/index.js';
import { ROOMY_TENANT_LIMITS_ENV } from './roomy-tenant-limits.js';
import { ALL_SCENARIOS, FaultMatrix } from '../environments/topology/fault-matrix.js';
import { isPerfect, renderFaultTable, type FaultRow } from '../environments/fault-report.js';

/** Runs the matrix; resolves with the exit code. */
export async function runTopologyMatrix(options: {
  quick: boolean;
  only?: string;
}): Promise<number> {
  const count = options.quick ? 2 : 5;
  const scenarios = ALL_SCENARIOS.filter((name) => !options.only || name.startsWith(options.only));
  process.stderr.write('starting the production topology...\n');
  const topology = await startTopology({
    nodeDelayMs: 1_500,
    env: {
      LOG_LEVEL: 'warn',
      WATCH_RETRY_DELAY_MS: '200',
      SYNC_READINESS_BUDGET_MS: '120000',
      ALLOW_DEV_TOKEN: 'true', // the matrix calls with the dev token
      // The matrix's creates of one tenant come at once: faults, not a shared installation's limits.
      TENANT_LIMITS: ROOMY_TENANT_LIMITS_ENV,
    },
  });
  const stop = () => void topology.stop().finally(() => process.exit(130));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  process.stderr.write(`topology ready in ${(topology.startToReadyMs / 1000).toFixed(1)} s\n`);
  const rows: FaultRow[] = [];
  try {
    const matrix = new FaultMatrix(topology);
    // A first create proves the workers are polling.
    await matrix.warmUp();
    for (const scenario of scenarios) {
      const row = await matrix.run(scenario, count);
      process.stderr.write(`${JSON.stringify(row)}\n`);
      rows.push(row);
    }
  } finally {
    await topology.stop();
  }
  console.log(renderFaultTable(rows));
  return rows.every(isPerfect) ? 0 : 1;
}
