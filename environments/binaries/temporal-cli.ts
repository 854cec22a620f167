/**
 * Finds a usable Temporal CLI binary (it carries the dev server and the Temporal UI), building
 * it once with Go when nothing else is available. See README, "Quick start".
 *
 * Run directly (`npm run temporal-cli`) it prints the binary's path on stdout.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { cachedBinaryPath, findGo, findOnPath, isExecutable } from './binary-lookup.js';

/** The CLI version built from the Go module proxy: the newest tag `go install` accepts. */
export const TEMPORAL_CLI_VERSION = 'v1.5.1';

/** Where the Go build is cached: outside the checkout, so fresh clones (CI) reuse it. */
export function cachedTemporalCliPath(): string {
  return cachedBinaryPath(`temporal-${TEMPORAL_CLI_VERSION}`, 'temporal');
}

/**
 * Returns the absolute path of a `temporal` binary, looking in order at: the `TEMPORAL_CLI`
 * environment variable, `temporal` on PATH, the user cache
 * (`~/.cache/durable-sandbox/temporal-v1.5.1/temporal`), and finally building it there with
 * `go install github.com/temporalio/cli/cmd/temporal@v1.5.1` (minutes the first time; progress
 * goes to stderr).
 * @throws Error when `TEMPORAL_CLI` names a missing file, or when nothing is found and Go is
 *   not installed or the build fails; the message lists the user's options.
 */
export function locateTemporalCli(): string {
  const fromEnv = process.env.TEMPORAL_CLI;
  if (fromEnv) {
    if (!isExecutable(fromEnv)) {
      throw new Error(`TEMPORAL_CLI=${fromEnv} is not an executable file`);
    }
    return fromEnv;
  }
  const onPath = findOnPath('temporal');
  if (onPath) return onPath;
  const cached = cachedTemporalCliPath();
  if (isExecutable(cached)) return cached;
  return buildTemporalCli(cached);
}

function buildTemporalCli(target: string): string {
  const go = findGo();
  const options =
    'Install Go (https://go.dev/doc/install) so it can be built once, or install the Temporal CLI ' +
    'and put `temporal` on PATH, or set TEMPORAL_CLI to its path.';
  if (!go) {
    throw new Error(`No Temporal CLI found and Go is not installed. ${options}`);
  }
  const gobin = join(target, '..');
  mkdirSync(gobin, { recursive: true });
  process.stderr.write(
    `Building the Temporal CLI ${TEMPORAL_CLI_VERSION} into ${gobin} with Go ` +
      '(once; this takes a few minutes)...\n',
  );
  const result = spawnSync(
    go,
    ['install', `github.com/temporalio/cli/cmd/temporal@${TEMPORAL_CLI_VERSION}`],
    { stdio: ['ignore', 'inherit', 'inherit'], env: { ...process.env, GOBIN: gobin } },
  );
  if (result.status !== 0 || !isExecutable(target)) {
    throw new Error(
      `Building the Temporal CLI with Go failed (exit ${result.status ?? result.signal}). ${options}`,
    );
  }
  process.stderr.write(`Temporal CLI ready: ${target}\n`);
  return target;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    process.stdout.write(`${locateTemporalCli()}\n`);
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\n`);
    process.exit(1);
  }
}
