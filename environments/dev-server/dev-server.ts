/**
 * Starts and stops `temporal server start-dev` (README, "Quick start"): no version check (no
 * network here), the search attributes of src/temporal/search-attribute-keys.ts registered, a free or chosen
 * port, the UI on or off, state in a DB file or in memory.
 *
 * The server never outlives its parent: it runs under a small `sh` guard that holds a pipe
 * from the parent on stdin and kills the server when that pipe closes, which happens when the
 * parent calls `stop()` and also when the parent dies, even by SIGKILL.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { SEARCH_ATTRIBUTE_KEYS } from '../../src/temporal/search-attribute-keys.js';
import { freePort } from '../../src/process/free-port.js';
import { locateTemporalCli } from '../binaries/temporal-cli.js';

/** Options for {@link startDevServer}. */
export interface DevServerOptions {
  /** Frontend gRPC port; 0 or unset picks a free port. */
  port?: number;
  /** Web UI port; unset picks a free port. Ignored when `ui` is false. */
  uiPort?: number;
  /** Serve the Temporal UI (default true). */
  ui?: boolean;
  /** SQLite file that keeps state across restarts; unset keeps state in memory. */
  dbFile?: string;
  /** SQLite pragmas for `dbFile`, e.g. `{journal_mode: 'wal'}` (`--sqlite-pragma k=v`). */
  sqlitePragmas?: Record<string, string>;
  /** Bind address (default 127.0.0.1). */
  ip?: string;
  /** How long to wait for the frontend to answer, in ms (default 120000: a loaded 2-core box is slow). */
  startTimeoutMs?: number;
  /** Where the server's own log lines go (default: discarded). */
  log?: (line: string) => void;
  /** Port of the server's Prometheus metrics (`--metrics-port`; served at `/metrics`); unset: none. */
  metricsPort?: number;
}

/** A running dev server. */
export interface DevServer {
  /** `host:port` of the frontend gRPC service, for `Connection.connect({address})`. */
  address: string;
  /** `http://host:port` of the Temporal UI, or undefined when headless. */
  uiUrl?: string;
  /** Process id of the guard process (the server's parent). */
  pid: number;
  /** Stops the server and waits for it to exit (SIGKILL after 10 s). Idempotent. */
  stop(): Promise<void>;
}

/**
 * Runs "$@" and kills it when stdin reaches EOF (parent called stop() or died). Background jobs
 * of a non-interactive sh get /dev/null as stdin, so the pipe is kept on fd 3 for the watcher.
 * Also used by the apiserver tier (apiserver-tier/process.ts).
 */
export const GUARD_SCRIPT = `
exec 3<&0
"$@" </dev/null 3<&- &
server=$!
( while read -r _ <&3; do :; done; kill -TERM "$server" 2>/dev/null ) &
watcher=$!
trap 'kill -TERM "$server" 2>/dev/null' TERM INT
wait "$server"; status=$?
wait "$server" 2>/dev/null
kill "$watcher" 2>/dev/null
exit $status
`;

/**
 * Starts a dev server and resolves once its frontend answers a gRPC health call and its
 * search attributes exist.
 * @throws Error when the binary cannot be found or built, when the server exits early, or when
 *   it does not answer within `startTimeoutMs`; the server is stopped before throwing.
 */
export async function startDevServer(options: DevServerOptions = {}): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  const port = options.port || (await freePort(ip));
  const ui = options.ui ?? true;
  const uiPort = ui ? (options.uiPort ?? (await freePort(ip))) : undefined;
  const binary = locateTemporalCli();
  const args = [
    'server',
    'start-dev',
    '--ip',
    ip,
    '--port',
    String(port),
    '--dynamic-config-value',
    'frontend.enableServerVersionCheck=false',
    // Activity tasks handed to the worker in the answer to the workflow task that scheduled
    // them (docs/architecture.md, "Round trips per create"); the server's default is off.
    '--dynamic-config-value',
    'system.enableActivityEagerExecution=true',
    // Task queue fairness: each tenant's workflows a share of the backlog by their fairness key
    // (src/temporal/priority.ts, docs/architecture.md "Fairness between tenants"); default off.
    '--dynamic-config-value',
    'matching.enableFairness=true',
    '--log-level',
    'warn',
    ...SEARCH_ATTRIBUTE_KEYS.flatMap((key) => ['--search-attribute', `${key.name}=Keyword`]),
  ];
  if (options.metricsPort) args.push('--metrics-port', String(options.metricsPort));
  if (ui) args.push('--ui-port', String(uiPort));
  else args.push('--headless');
  if (options.dbFile) {
    args.push('--db-filename', options.dbFile);
    for (const [key, value] of Object.entries(options.sqlitePragmas ?? {})) {
      args.push('--sqlite-pragma', `${key}=${value}`);
    }
  }

  const child = spawn('sh', ['-c', GUARD_SCRIPT, 'temporal-guard', binary, ...args], {
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true, // own process group, so stop() can kill the whole tree as a last resort
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const log = options.log ?? (() => {});
  let recentOutput = '';
  const keep = (chunk: Buffer): void => {
    const text = chunk.toString();
    recentOutput = (recentOutput + text).slice(-4000);
    for (const line of text.split('\n')) if (line.trim()) log(line);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  // The parent must not wait on this child to exit; the pipe still ties their lifetimes.
  child.unref();
  (child.stdout as unknown as { unref?: () => void })?.unref?.();
  (child.stderr as unknown as { unref?: () => void })?.unref?.();
  (child.stdin as unknown as { unref?: () => void })?.unref?.();

  const address = `${ip}:${port}`;
  const server: DevServer = {
    address,
    uiUrl: ui ? `http://${ip}:${uiPort}` : undefined,
    pid: child.pid ?? -1,
    stop: once(() => stopGuard(child, exited)),
  };

  try {
    await waitUntilServing(address, options.startTimeoutMs ?? 120_000, exited, () => recentOutput);
    return server;
  } catch (err) {
    await server.stop();
    throw err;
  }
}

async function waitUntilServing(
  address: string,
  timeoutMs: number,
  exited: Promise<number | null>,
  output: () => string,
): Promise<void> {
  const deadlineAtMs = Date.now() + timeoutMs;
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));
  let lastError: unknown;
  while (Date.now() < deadlineAtMs) {
    if (exitCode !== undefined) {
      throw new Error(`Temporal dev server exited (code ${exitCode}) before serving:\n${output()}`);
    }
    try {
      const connection = await Connection.connect({ address, connectTimeout: 2_000 });
      try {
        await connection.healthService.check({});
        const { customAttributes } = await connection.operatorService.listSearchAttributes({
          namespace: 'default',
        });
        if (SEARCH_ATTRIBUTE_KEYS.every((key) => customAttributes?.[key.name] !== undefined))
          return;
        lastError = new Error('search attributes not registered yet');
      } finally {
        await connection.close();
      }
    } catch (err) {
      lastError = err;
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(
    `Temporal dev server at ${address} did not answer within ${timeoutMs} ms ` +
      `(${String(lastError)}):\n${output()}`,
  );
}

async function stopGuard(child: ChildProcess, exited: Promise<number | null>): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  child.stdin?.end(); // the guard sees EOF and sends SIGTERM to the server
  const timeout = new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), 10_000));
  if ((await Promise.race([exited, timeout])) === 'timeout' && child.pid) {
    try {
      process.kill(-child.pid, 'SIGKILL');
    } catch {
      // already gone
    }
    await exited;
  }
}

function once(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () => (running ??= fn());
}
