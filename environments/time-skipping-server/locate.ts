/**
 * Temporal's time-skipping test server, for workflow tests on `@temporalio/testing`'s
 * `TestWorkflowEnvironment.createTimeSkipping()` (docs/testing.md, "The fast tier"). The SDK
 * would download a native build from Temporal's site at first use, which this project's
 * machines cannot reach; the same server is published on Maven Central
 * (`io.temporal:temporal-test-server`, pinned in pom.xml beside this file) and runs on the JDK.
 *
 * Looked up in order: `TEMPORAL_TEST_SERVER` (an executable taking the port as its first
 * argument), else `~/.cache/durable-sandbox/temporal-test-server-<version>/temporal-test-server`,
 * else fetched there once with Maven (`mvn dependency:copy-dependencies`: about 25 s, 38 MB of
 * jars) next to a launcher script that runs `java io.temporal.testserver.TestServer <port>`.
 *
 * Run directly (`node --import tsx environments/time-skipping-server/locate.ts`) it prints the
 * path, fetching what is missing.
 */
import { execFile } from 'node:child_process';
import {
  accessSync,
  chmodSync,
  constants,
  existsSync,
  mkdirSync,
  renameSync,
  rmSync,
} from 'node:fs';
import { writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';

/** The version pom.xml pins. */
export const TEST_SERVER_VERSION = '1.38.0';

const POM = fileURLToPath(new URL('./pom.xml', import.meta.url));

/** Where the launcher is cached: `~/.cache/durable-sandbox/temporal-test-server-<version>/`. */
export function cachedTestServerPath(): string {
  const cacheRoot = process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache');
  return join(
    cacheRoot,
    'durable-sandbox',
    `temporal-test-server-${TEST_SERVER_VERSION}`,
    'temporal-test-server',
  );
}

/**
 * The test server's launcher, fetching the jars first when neither `TEMPORAL_TEST_SERVER` nor
 * the cache has it. Several processes may call it at once: each fetches into a directory of its
 * own and the first rename wins.
 * @returns the path of an executable that takes the port as its first argument
 * @throws Error when `TEMPORAL_TEST_SERVER` is not executable, or Maven fails (its output in the
 *   message: no Java or no Maven on PATH, Maven Central unreachable)
 */
export async function locateTestServer(): Promise<string> {
  const named = process.env.TEMPORAL_TEST_SERVER;
  if (named) {
    try {
      accessSync(named, constants.X_OK);
    } catch {
      throw new Error(`TEMPORAL_TEST_SERVER=${named} is not an executable file`);
    }
    return named;
  }
  const launcher = cachedTestServerPath();
  if (existsSync(launcher)) return launcher;
  const dir = dirname(launcher);
  const staging = `${dir}.${process.pid}.partial`;
  rmSync(staging, { recursive: true, force: true });
  mkdirSync(staging, { recursive: true });
  try {
    await promisify(execFile)(
      'mvn',
      [
        '-q',
        '-B',
        '-f',
        POM,
        'dependency:copy-dependencies',
        `-DoutputDirectory=${join(staging, 'lib')}`,
      ],
      { maxBuffer: 16 * 1024 * 1024 },
    );
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    const { stdout, stderr, message } = err as { stdout?: string; stderr?: string } & Error;
    throw new Error(
      `fetching Temporal's test server ${TEST_SERVER_VERSION} with Maven failed: ` +
        `${message}\n${stdout ?? ''}${stderr ?? ''}`,
    );
  }
  const script = join(staging, 'temporal-test-server');
  // The classpath is the launcher's own directory, so the directory can be renamed.
  writeFileSync(
    script,
    '#!/bin/sh\n' +
      'exec java -cp "$(dirname "$0")/lib/*" io.temporal.testserver.TestServer "$@"\n',
  );
  chmodSync(script, 0o755);
  try {
    renameSync(staging, dir);
  } catch {
    rmSync(staging, { recursive: true, force: true }); // another process was first
  }
  return launcher;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const started = Date.now();
  const path = await locateTestServer();
  process.stderr.write(`time-skipping test server ready in ${Date.now() - started} ms\n`);
  process.stdout.write(`${path}\n`);
}
