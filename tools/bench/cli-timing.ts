/**
 * The default mode's CLI timing (docs/benchmarks.md): wall time of
 * `create --disk-mib 300 --template <fresh> --wait` (a refusal by the node, exit 1), 5 runs
 * each, alternating, through the package bin (`clients/cli/bin/durable-sandbox.js`) and, as the baseline
 * measured in the same run, through `npm run cli --`; on a stack of its own (the simulated
 * node's default delay).
 */
import { spawn } from 'node:child_process';
import { problems, startStack, summary, TOKEN, type Summary } from './support.js';

/** Runs a command to its end; returns ms and its exit code. */
async function timed(
  command: string,
  args: string[],
  env: NodeJS.ProcessEnv,
): Promise<{ ms: number; code: number | null }> {
  const startedAtMs = performance.now();
  const child = spawn(command, args, { env: { ...process.env, ...env }, stdio: 'ignore' });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  return { ms: performance.now() - startedAtMs, code };
}

/**
 * Times the CLI's refused `create --wait`; a run that does not exit 1 is a problem.
 * @param runs how many runs each way (5 in docs/benchmarks.md's figures)
 * @returns ms summaries: `bin` and `npm_run_cli_baseline`
 */
export async function measureCliTiming(
  runs = 5,
): Promise<{ bin: Summary; npm_run_cli_baseline: Summary }> {
  const stack = await startStack();
  try {
    console.log(`CLI timing: stack up at ${stack.base} (pid ${stack.pid})`);
    const env = { DURABLE_SANDBOX_URL: stack.base, DURABLE_SANDBOX_TOKEN: TOKEN };
    const args = () => ['create', '--disk-mib', '300', '--template', stack.fresh.take(), '--wait'];
    const bin: number[] = [];
    const npmRun: number[] = [];
    for (let i = 0; i < runs; i++) {
      for (const [times, command, commandArgs] of [
        [bin, process.execPath, ['clients/cli/bin/durable-sandbox.js', ...args()]],
        [npmRun, 'npm', ['run', '--silent', 'cli', '--', ...args()]],
      ] as const) {
        const { ms, code } = await timed(command, [...commandArgs], env);
        if (code !== 1)
          problems.push(`${command} ${commandArgs.join(' ')} exited ${code}, expected 1`);
        times.push(ms);
      }
    }
    const figures = { bin: summary(bin), npm_run_cli_baseline: summary(npmRun) };
    console.log(`\nCLI create --wait, refused (ms): ${JSON.stringify(figures)}`);
    return figures;
  } finally {
    await stack.stop();
  }
}
