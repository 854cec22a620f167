/**
 * Runs one server process of the apiserver tier (etcd, kube-apiserver) under the dev server's
 * stdin-pipe guard (environments/dev-server/dev-server.ts `GUARD_SCRIPT`): the process is killed when the
 * parent calls `stop()` and also when the parent dies, even by SIGKILL, so no etcd or
 * kube-apiserver outlives the tests or `npm start`.
 */
import { spawn } from 'node:child_process';
import { GUARD_SCRIPT } from '../dev-server/dev-server.js';

/** A running guarded process. */
export interface GuardedProcess {
  /** Process id of the guard (the server's parent, leader of its process group). */
  pid: number;
  /** Resolves with the exit code (null when killed by a signal) once the guard exits. */
  exited: Promise<number | null>;
  /** The exit code once exited, else undefined. */
  exitCode(): number | null | undefined;
  /** The last 4000 characters the server wrote on stdout and stderr. */
  recentOutput(): string;
  /** SIGTERM through the guard, SIGKILL of the process group after `graceMs` (default 10000). Idempotent. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Starts `binary args…` under the guard.
 * @param name shown in the guard's command line (`<name>-guard`), so leftovers are easy to find
 * @param log receives each output line (default: discarded)
 * @param cwd the working directory (default: this process's)
 */
export function startGuarded(
  name: string,
  binary: string,
  args: string[],
  log: (line: string) => void = () => {},
  cwd?: string,
): GuardedProcess {
  const child = spawn('sh', ['-c', GUARD_SCRIPT, `${name}-guard`, binary, ...args], {
    cwd,
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true, // own process group, so stop() can kill the whole tree as a last resort
  });
  let code: number | null | undefined;
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (exitCode) => {
      code = exitCode;
      resolve(exitCode);
    }),
  );
  let output = '';
  const keep = (chunk: Buffer): void => {
    const text = chunk.toString();
    output = (output + text).slice(-4000);
    for (const line of text.split('\n')) if (line.trim()) log(line);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  // The parent must not wait on this child to exit; the pipe still ties their lifetimes.
  child.unref();
  for (const stream of [child.stdout, child.stderr, child.stdin]) {
    (stream as unknown as { unref?: () => void }).unref?.();
  }
  let stopping: Promise<void> | undefined;
  return {
    pid: child.pid ?? -1,
    exited,
    exitCode: () => code,
    recentOutput: () => output,
    stop(graceMs = 10_000) {
      stopping ??= (async () => {
        if (code !== undefined) return;
        child.stdin.end(); // the guard sees EOF and sends SIGTERM to the server
        let timer: NodeJS.Timeout | undefined;
        const timeout = new Promise<'timeout'>((resolve) => {
          timer = setTimeout(() => resolve('timeout'), graceMs);
        });
        const first = await Promise.race([exited, timeout]);
        clearTimeout(timer);
        if (first === 'timeout' && child.pid) {
          try {
            process.kill(-child.pid, 'SIGKILL');
          } catch {
            // already gone
          }
          await exited;
        }
      })();
      return stopping;
    },
  };
}
