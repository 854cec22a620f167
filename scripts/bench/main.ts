/**
 * `npm run bench [-- <mode>]`: the benchmark's entry point (docs/benchmarks.md). Modes:
 *
 *   - (none): the outcome benchmark (scripts/bench/outcomes.ts; `--quick` for smaller counts)
 *     and the CLI timing (scripts/bench/cli-timing.ts) -> bench-results/bench-<time>.json;
 *   - `real` (or `--real`): refusal latency, simulated cluster beside the real apiserver tier
 *     (scripts/bench/real.ts) -> bench-results/bench-real-<time>.json;
 *   - `floors`: the refusal before 202 (scripts/bench/floors.ts)
 *     -> bench-results/bench-floors-<time>.json;
 *   - `waits` (or `--waits`): what waiting creates cost (scripts/bench/waits.ts)
 *     -> bench-results/bench-waits-<time>.json;
 *   - `notify`: what the operation notifier's pg_notify costs PostgreSQL (scripts/bench/notify.ts)
 *     -> bench-results/bench-notify-<time>.json.
 *
 * Each mode checks its answers; the process exits 1 when a check failed or the mode threw.
 */
import { measureCliTiming } from './cli-timing.js';
import { measureFloors } from './floors.js';
import { measureNotify } from './notify.js';
import { measureOutcomes } from './outcomes.js';
import { compareRefusalLatency } from './real.js';
import { finish, writeResults } from './support.js';
import { measureWaits } from './waits.js';

/** Each mode: what it measures, as the results file's fields. */
const MODES: Record<string, (args: string[]) => Promise<Record<string, unknown>>> = {
  default: async (args) => ({
    ...(await measureOutcomes(args.includes('--quick'))),
    cli_create_wait_refused_ms: await measureCliTiming(),
  }),
  real: compareRefusalLatency,
  floors: measureFloors,
  waits: measureWaits,
  notify: measureNotify,
};

/** The mode named by the arguments (`real`, `--real`, ...), `default` when none is. */
function modeOf(args: string[]): string {
  const named = args.map((arg) => arg.replace(/^--/, '')).filter((arg) => arg in MODES);
  if (named.length > 1) throw new Error(`one mode at a time, not ${named.join(' and ')}`);
  const unknown = args.filter((arg) => !(arg.replace(/^--/, '') in MODES) && arg !== '--quick');
  if (unknown.length > 0)
    throw new Error(`unknown argument ${unknown.join(' ')}; modes: real, floors, waits, notify`);
  return named[0] ?? 'default';
}

async function main(): Promise<void> {
  const args = process.argv.slice(2);
  const mode = modeOf(args);
  writeResults(mode, await MODES[mode]!(args));
  finish();
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
