/**
 * `npm start`'s script as a child process, on free ports, for end-to-end tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../config/free-port.js';
import { until } from './until.js';

/** A running (or exited) embedded stack. */
export interface StackProcess {
  child: ChildProcess;
  apiUrl: string;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code once it has exited. */
  exited: Promise<number | null>;
  /** SIGINT (Ctrl-C), then its exit code. */
  interrupt(): Promise<number | null>;
}

/**
 * Starts `scripts/start.ts` with `env` on a free API and metrics port.
 * @param waitUntilRunning wait for the banner (default true); false returns at once
 * @throws when the banner does not appear within 240 s or the process exits first
 */
export async function startStackProcess(
  env: Record<string, string>,
  waitUntilRunning = true,
): Promise<StackProcess> {
  const port = await freePort();
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/start.ts'], {
    env: {
      ...process.env,
      PORT: String(port),
      METRICS_PORT: String(await freePort()),
      LOG_FORMAT: 'json',
      LOG_LEVEL: 'warn',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const stack: StackProcess = {
    child,
    apiUrl: `http://127.0.0.1:${port}`,
    output: () => output,
    exited,
    async interrupt() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGINT');
      return exited;
    },
  };
  if (waitUntilRunning) {
    await until(
      () => output.includes('durable-sandbox is running') || child.exitCode !== null,
      240_000,
    );
    if (child.exitCode !== null) throw new Error(`the stack exited early:\n${output}`);
  }
  return stack;
}
