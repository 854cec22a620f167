/**
 * The two checkouts a side-by-side bench run measures (docs/benchmarks.md): the baseline at
 * BASELINE_DIR (e.g. a worktree of `main` before a change, with its own node_modules) and the
 * candidate at CANDIDATE_DIR (default: this checkout). Each runs its own `src/worker/main.ts`,
 * `src/api/main.ts` or `tools/start.ts` as a child process from its own directory, so each runs
 * its own code against servers the bench starts.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** A checkout under test. */
export interface Checkout {
  /** `baseline` or `candidate`, as the printed table names it. */
  label: 'baseline' | 'candidate';
  /** Absolute path of the checkout. */
  dir: string;
}

/**
 * The order a run measures its checkouts in: `BENCH_ORDER=candidate-first` measures the candidate
 * before the baseline (the default, `baseline-first`, the other way round). A mode measures one
 * checkout whole before the next, so a drift of the machine during a run (another tenant of the
 * host, thermal state) lands on the second one: running both orders tells a change from a drift.
 * @throws Error for any other value
 */
export function candidateFirst(): boolean {
  const order = process.env.BENCH_ORDER ?? 'baseline-first';
  if (order !== 'baseline-first' && order !== 'candidate-first')
    throw new Error(`BENCH_ORDER is ${order}: baseline-first or candidate-first`);
  return order === 'candidate-first';
}

/**
 * The checkouts of this run, in {@link candidateFirst}'s order: the candidate, and the baseline
 * when BASELINE_DIR names a checkout with `src/worker/main.ts` (else it is left out with a
 * message).
 * @throws Error when CANDIDATE_DIR names no checkout with `src/worker/main.ts`, or BENCH_ORDER is
 *   neither order
 */
export function checkoutsOfRun(): Checkout[] {
  const candidate = resolve(process.env.CANDIDATE_DIR ?? '.');
  if (!existsSync(join(candidate, 'src/worker/main.ts')))
    throw new Error(`CANDIDATE_DIR ${candidate} holds no src/worker/main.ts`);
  const baselineDir = process.env.BASELINE_DIR ?? '';
  const checkouts: Checkout[] = [];
  if (baselineDir && existsSync(join(baselineDir, 'src/worker/main.ts'))) {
    checkouts.push({ label: 'baseline', dir: resolve(baselineDir) });
  } else {
    console.log(
      `baseline skipped: BASELINE_DIR (${baselineDir || 'unset'}) names no checkout with src/worker/main.ts`,
    );
  }
  checkouts.push({ label: 'candidate', dir: candidate });
  return candidateFirst() ? checkouts.reverse() : checkouts;
}

/**
 * Runs `entry` (a TypeScript file of the checkout, e.g. `src/worker/main.ts`) with tsx from the
 * checkout's directory, `env` added to the bench's environment; stderr is inherited, stdout
 * dropped, and an exit not asked for by {@link stopChild} is printed. `NODE_OPTIONS_BENCH` (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`) is passed to node.
 */
export function runInCheckout(
  checkout: Checkout,
  entry: string,
  env: Record<string, string>,
): ChildProcess {
  const nodeArgs = (process.env.NODE_OPTIONS_BENCH ?? '').split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', entry], {
    cwd: checkout.dir,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  // An exit the bench did not ask for explains the errors after it: say so when it happens.
  child.once('exit', (code, signal) => {
    if (!stopping.has(child))
      console.log(`  ${checkout.label}: ${entry} (pid ${child.pid}) exited: ${code ?? signal}`);
  });
  return child;
}

/** A child process whose last 8 KiB of output (stdout and stderr) are kept, not printed. */
export interface KeptProcess {
  entry: string;
  child: ChildProcess;
  /** The last 8 KiB of its output. */
  tail(): string;
}

/**
 * Runs `entry` as {@link runInCheckout} does (from `checkout`, default this directory, with
 * `NODE_OPTIONS_BENCH`), but keeps its output instead of printing it, so a caller can show why
 * it exited.
 */
export function runKept(
  checkout: Checkout | undefined,
  entry: string,
  env: Record<string, string>,
): KeptProcess {
  const nodeArgs = (process.env.NODE_OPTIONS_BENCH ?? '').split(/\s+/).filter(Boolean);
  const child = spawn(process.execPath, [...nodeArgs, '--import', 'tsx', entry], {
    cwd: checkout?.dir ?? process.cwd(),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-8_192));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return { entry, child, tail: () => output };
}

/** The children the bench is stopping (their exit is expected). */
const stopping = new WeakSet<ChildProcess>();

/** Sends `signal` and resolves when the child has exited (at once if it already had). */
export async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolveExit) => child.once('exit', resolveExit));
  stopping.add(child);
  child.kill(signal);
  await exited;
}
