/**
 * The pieces every binary locator of the project shares (environments/binaries/temporal-cli.ts for the
 * Temporal CLI, apiserver-tier/binaries.ts for etcd and kube-apiserver): the user cache they
 * build into, the executable check, the PATH search, and the Go toolchain they build with.
 */
import { accessSync, constants } from 'node:fs';
import { homedir } from 'node:os';
import { delimiter, join } from 'node:path';

/**
 * Where a built binary is cached, outside the checkout so fresh clones (CI) reuse it:
 * `${XDG_CACHE_HOME:-~/.cache}/durable-sandbox/<dir>/<name>`, e.g. `temporal-v1.5.1/temporal`.
 */
export function cachedBinaryPath(dir: string, name: string): string {
  const cacheRoot = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(cacheRoot, 'durable-sandbox', dir, name);
}

/** Whether `path` exists and this process may execute it. */
export function isExecutable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/** The first executable `name` in a PATH directory, or undefined. */
export function findOnPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir && isExecutable(join(dir, name))) return join(dir, name);
  }
  return undefined;
}

/** The `go` binary: on PATH, else the official tarball's /usr/local/go/bin/go; undefined if none. */
export function findGo(): string | undefined {
  const fallback = '/usr/local/go/bin/go';
  return findOnPath('go') ?? (isExecutable(fallback) ? fallback : undefined);
}
