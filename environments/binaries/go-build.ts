/**
 * Builds a tier's binaries (etcd and kube-apiserver in apiserver-tier/, the Temporal server,
 * its schema tool and UI server in environments/temporal-tier/) once from the Go module proxy:
 * each from a wrapper module with pinned go.mod/go.sum, into `~/.cache/durable-sandbox/`,
 * outside the checkout, so fresh clones (CI) reuse them. A binary is found first through its
 * environment variable, PATH or the cache; only then built, under a lock so concurrent test
 * files build it once.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { cachedBinaryPath, findGo, findOnPath, isExecutable } from './binary-lookup.js';

/** One binary of a tier: how to find it and how to build it. */
export interface TierBinary {
  /** Executable name, looked up on PATH too: `etcd`, `kube-apiserver`, `temporal-server`. */
  name: string;
  /** Environment variable that names the binary's path. */
  envVar: string;
  /** The pinned release (the wrapper module's requirement). */
  version: string;
  /** Absolute path of the wrapper module (its go.mod/go.sum pin every dependency). */
  moduleDir: string;
  /** The Go main package `go build` compiles. */
  mainPackage: string;
  /**
   * Whether to build with `-trimpath` (default true). Off for the Temporal server tier, whose
   * wrapper pins the Temporal CLI's module versions: without it the packages both share come
   * from Go's build cache after the CLI's `go install`.
   */
  trimpath?: boolean;
}

/** Where a build is cached, e.g. `~/.cache/durable-sandbox/kube-apiserver-v1.34.12/kube-apiserver`. */
export function cachedTierBinaryPath(binary: TierBinary): string {
  return cachedBinaryPath(`${binary.name}-${binary.version}`, binary.name);
}

/**
 * The binary's path when it is already available, looking in order at its environment variable
 * (`ETCD_BINARY`, `KUBE_APISERVER_BINARY`), PATH and the user cache; undefined when it must be
 * built.
 * @throws Error when the environment variable names a file that is not executable
 */
export function findBinary(binary: TierBinary): string | undefined {
  const fromEnv = process.env[binary.envVar];
  if (fromEnv) {
    if (!isExecutable(fromEnv)) {
      throw new Error(`${binary.envVar}=${fromEnv} is not an executable file`);
    }
    return fromEnv;
  }
  const onPath = findOnPath(binary.name);
  if (onPath) return onPath;
  const cached = cachedTierBinaryPath(binary);
  return isExecutable(cached) ? cached : undefined;
}

/**
 * Returns the binary's path: {@link findBinary}, else a `go build` of the wrapper module into
 * the cache. A cold build takes minutes (kube-apiserver: 6–8.5 min on 2 cores, about 1.8 GB of
 * memory); stderr gets a line when it starts, one every 30 s with the packages compiled so far,
 * and one with the time it took.
 * @throws Error when nothing is found and Go is not installed or the build fails; the message
 *   lists the user's options.
 */
export async function locateBinary(binary: TierBinary): Promise<string> {
  return findBinary(binary) ?? (await buildOnce(binary));
}

/**
 * Builds the binary unless another process is building it already (a lock directory beside the
 * target, holding the builder's pid): then waits for that build, taking the lock over when its
 * holder has died. Test files that start a tier at once build it only once.
 */
async function buildOnce(binary: TierBinary): Promise<string> {
  const target = cachedTierBinaryPath(binary);
  const lock = `${target}.lock`;
  mkdirSync(dirname(target), { recursive: true });
  let announced = false;
  for (;;) {
    try {
      mkdirSync(lock);
    } catch {
      if (isExecutable(target)) return target;
      if (lockIsStale(lock)) rmSync(lock, { recursive: true, force: true });
      else {
        if (!announced) {
          process.stderr.write(`Waiting for ${binary.name}: another process is building it...\n`);
          announced = true;
        }
        await new Promise((resolve) => setTimeout(resolve, 1000));
      }
      continue;
    }
    try {
      writeFileSync(join(lock, 'pid'), String(process.pid));
      return isExecutable(target) ? target : await buildBinary(binary);
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
}

/** A lock whose holder has died, or that never got a pid within 10 s. */
function lockIsStale(lock: string): boolean {
  let holder = 0;
  try {
    holder = Number(readFileSync(join(lock, 'pid'), 'utf8'));
  } catch {
    // not written yet
  }
  if (holder) return !isAlive(holder);
  try {
    return Date.now() - statSync(lock).mtimeMs > 10_000;
  } catch {
    return false; // released meanwhile
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function buildBinary(binary: TierBinary): Promise<string> {
  const go = findGo();
  const options =
    `Install Go (https://go.dev/doc/install) so it can be built once, or put \`${binary.name}\` ` +
    `${binary.version} on PATH, or set ${binary.envVar} to its path.`;
  if (!go) throw new Error(`No ${binary.name} found and Go is not installed. ${options}`);
  const target = cachedTierBinaryPath(binary);
  mkdirSync(dirname(target), { recursive: true });
  const partial = `${target}.partial-${process.pid}`;
  const startedAtMs = Date.now();
  const elapsed = () => `${Math.round((Date.now() - startedAtMs) / 1000)} s`;
  process.stderr.write(
    `Building ${binary.name} ${binary.version} with Go into ${dirname(target)} ` +
      '(once; this takes minutes on a small machine)...\n',
  );
  let packages = 0;
  const progress = setInterval(() => {
    process.stderr.write(
      `  still building ${binary.name}: ${packages} packages compiled, ${elapsed()}\n`,
    );
  }, 30_000);
  let output = '';
  const status = await new Promise<number | string>((resolve) => {
    // -mod=readonly: the pinned go.mod/go.sum are used as they are, never rewritten.
    const args = [
      'build',
      '-v',
      '-mod=readonly',
      ...(binary.trimpath === false ? [] : ['-trimpath']),
      '-ldflags=-s',
      '-o',
      partial,
      binary.mainPackage,
    ];
    // nice -n 10: a build takes both cores for minutes; what else runs keeps its share.
    const nice = findOnPath('nice');
    const child = spawn(nice ?? go, nice ? ['-n', '10', go, ...args] : args, {
      cwd: binary.moduleDir,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr.on('data', (chunk: Buffer) => {
      const text = chunk.toString();
      output = (output + text).slice(-4000);
      packages += text.split('\n').filter((line) => line.trim() !== '').length;
    });
    child.on('error', (err) => resolve(err.message));
    child.on('exit', (code, signal) => resolve(code ?? signal ?? 'unknown'));
  });
  clearInterval(progress);
  if (status !== 0 || !isExecutable(partial)) {
    throw new Error(
      `Building ${binary.name} with Go failed (exit ${status}) after ${elapsed()}:\n${output}\n${options}`,
    );
  }
  renameSync(partial, target);
  process.stderr.write(`${binary.name} ${binary.version} built in ${elapsed()}: ${target}\n`);
  return target;
}
