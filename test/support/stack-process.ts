/**
 * `npm start`'s script as a child process, on free ports, for end-to-end tests; or `npm start`
 * itself, in its own process group, interrupted as a terminal's Ctrl-C does (the whole group).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../../src/process/free-port.js';
import { waitUntil } from '../../tools/wait-until.js';

/** A running (or exited) embedded stack. */
export interface StackProcess {
  child: ChildProcess;
  apiUrl: string;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code once it has exited. */
  exited: Promise<number | null>;
  /**
   * SIGINT (Ctrl-C), then its exit code; with `npm start`, to the whole process group as a
   * terminal sends it (npm forwards it to its script as well).
   */
  interrupt(): Promise<number | null>;
  /** SIGKILL to what is left (the process group with `npm start`); for clean-ups. */
  kill(): void;
}

/** Options of {@link startStackProcess}. */
export interface StackProcessOptions {
  /** Run `npm start` (package.json's script) instead of `node --import tsx tools/start.ts`. */
  viaNpm?: boolean;
}

/** Starts a stack on other free ports when one it was given was taken before it listened. */
const PORT_ATTEMPTS = 3;

/**
 * Starts `tools/start.ts` with `env` on a free API and metrics port. A free port is only free
 * when it is picked: the stack listens on it after its servers have started (with
 * `CLUSTER=real`, etcd and kube-apiserver, which pick free ports of their own meanwhile), so
 * another process may take it first. Such a start (`EADDRINUSE`, or the stack's own check's "is
 * in use") is made again on other ports, up to {@link PORT_ATTEMPTS} times.
 * @param waitUntilRunning wait for the banner (default true); false returns at once
 * @throws when the banner does not appear within 240 s or the process exits first
 */
export async function startStackProcess(
  env: Record<string, string>,
  waitUntilRunning = true,
  options: StackProcessOptions = {},
): Promise<StackProcess> {
  for (let attempt = 1; ; attempt++) {
    const stack = await spawnStack(env, options);
    if (!waitUntilRunning) return stack;
    await waitUntil(
      () => stack.output().includes('durable-sandbox is running') || stack.child.exitCode !== null,
      { timeoutMs: 240_000 },
    );
    if (stack.child.exitCode === null) return stack;
    if (attempt < PORT_ATTEMPTS && /EADDRINUSE|is in use on 127\.0\.0\.1/.test(stack.output()))
      continue;
    throw new Error(`the stack exited early:\n${stack.output()}`);
  }
}

/** Spawns the stack on free ports, without waiting for it. */
async function spawnStack(
  env: Record<string, string>,
  options: StackProcessOptions,
): Promise<StackProcess> {
  const port = await freePort();
  const [command, args] = options.viaNpm
    ? ['npm', ['start', '--silent']]
    : [process.execPath, ['--import', 'tsx', 'tools/start.ts']];
  const child = spawn(command, args, {
    detached: options.viaNpm === true, // its own process group, as a terminal's job
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
      if (child.exitCode === null && child.signalCode === null) signal('SIGINT');
      return exited;
    },
    kill() {
      try {
        signal('SIGKILL');
      } catch {
        // already gone
      }
    },
  };
  function signal(name: NodeJS.Signals): void {
    if (options.viaNpm && child.pid) process.kill(-child.pid, name);
    else child.kill(name);
  }
  return stack;
}
