/**
 * `npm run worker` (src/worker/main.ts) of some checkout as a child process: this one, or a release
 * checked out by tools/release-before.ts. For the upgrade test and the fixture recorder.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { freePort } from '../src/process/free-port.js';
import { pathInCheckout } from './release-before.js';

/** A running (or exited) worker process. */
export interface WorkerProcess {
  child: ChildProcess;
  /** Its process id; its Temporal worker identity is `<pid>@<hostname>`. */
  pid: number;
  /** Everything it printed so far (stdout and stderr). */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal) once it has exited. */
  exited: Promise<number | null>;
  /** SIGKILL (a crash: no graceful shutdown, running activities are abandoned), then exit. */
  kill(): Promise<number | null>;
}

/** Options of {@link startWorkerProcess}. */
export interface WorkerProcessOptions {
  /** The checkout whose `src/worker/main.ts` runs (its own node_modules). */
  cwd: string;
  /** `host:port` of the Temporal frontend. */
  temporalAddress: string;
  taskQueue: string;
  kubeconfig: string;
  /** Store: SQLite in `DATA_DIR`, or `databaseUrl` (PostgreSQL). */
  dataDir: string;
  databaseUrl?: string;
  /** More environment (e.g. `TEMPORAL_NAMESPACE`). */
  env?: Record<string, string>;
  /** How long to wait for `worker started`, in ms (default 240000: the bundle builds first). */
  startTimeoutMs?: number;
}

/**
 * Starts the worker and resolves once it logged `worker started` (its workflow bundle is built
 * and it polls the task queue).
 * @throws with its output when it exits first or does not start within `startTimeoutMs`
 */
export async function startWorkerProcess(options: WorkerProcessOptions): Promise<WorkerProcess> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', pathInCheckout(options.cwd, 'src/worker/main.ts')],
    {
      cwd: options.cwd,
      env: {
        ...process.env,
        TEMPORAL_ADDRESS: options.temporalAddress,
        TEMPORAL_TASK_QUEUE: options.taskQueue,
        KUBECONFIG: options.kubeconfig,
        DATA_DIR: options.dataDir,
        DATABASE_URL: options.databaseUrl ?? '',
        WATCH_RETRY_DELAY_MS: '100',
        METRICS_PORT: String(await freePort()),
        LOG_FORMAT: 'json',
        LOG_LEVEL: 'info',
        ...options.env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', resolve));
  const started = new Promise<boolean>((resolve) => {
    const timer = setTimeout(() => resolve(false), options.startTimeoutMs ?? 240_000);
    const check = () => {
      if (!output.includes('"worker started"')) return;
      clearTimeout(timer);
      resolve(true);
    };
    child.stdout?.on('data', check);
    void exited.then(() => {
      clearTimeout(timer);
      resolve(output.includes('"worker started"'));
    });
  });
  const worker: WorkerProcess = {
    child,
    pid: child.pid ?? -1,
    output: () => output,
    exited,
    async kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      return exited;
    },
  };
  if (!(await started) || child.exitCode !== null) {
    await worker.kill();
    throw new Error(`the worker in ${options.cwd} did not start:\n${output}`);
  }
  return worker;
}
