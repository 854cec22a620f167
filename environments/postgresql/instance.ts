/**
 * A PostgreSQL instance of its own for the production topology: `initdb` into a temporary
 * directory (`durable-sandbox-pg-*`), the server on a free loopback port, run as the `postgres`
 * OS user when this process is root (PostgreSQL refuses to run as root). Unlike the machine's
 * shared cluster it can be stopped and restarted by the fault matrix without touching anyone
 * else's databases. The server runs under the stdin guard (apiserver-tier/process.ts), so it
 * dies with its parent.
 *
 * The binaries come from PG_BIN_DIR, else the newest `/usr/lib/postgresql/<major>/bin` (Debian's
 * `postgresql` package).
 */
import { execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { freePort } from '../../src/process/free-port.js';
import { startGuarded, type GuardedProcess } from '../apiserver-tier/process.js';

const run = promisify(execFile);

/** Options of {@link startPostgresInstance}. */
export interface PostgresInstanceOptions {
  /** Receives the server's log lines (default: discarded). */
  log?: (line: string) => void;
  /** How long to wait for the server to accept connections, in ms (default 60000). */
  startTimeoutMs?: number;
}

/** A running instance; its superuser `postgres` has password `postgres` on TCP. */
export interface PostgresInstance {
  host: '127.0.0.1';
  port: number;
  /** The superuser's URL of database `name` (default `postgres`). */
  url(name?: string): string;
  /** Creates a role that owns a new database of the same name; returns its URL. */
  createDatabase(name: string): Promise<string>;
  /** Stops the server (fast shutdown: open sessions are ended). The data directory stays. */
  stopServer(): Promise<void>;
  /** Starts the server again on the same port and data. */
  startServer(): Promise<void>;
  /** Stops the server and removes the data directory. Idempotent. */
  stop(): Promise<void>;
}

/**
 * Initialises and starts an instance.
 * @throws Error when no PostgreSQL binaries are installed, or the server does not accept
 *   connections within `startTimeoutMs`
 */
export async function startPostgresInstance(
  options: PostgresInstanceOptions = {},
): Promise<PostgresInstance> {
  const bin = postgresBinDir();
  const log = options.log ?? (() => {});
  const asRoot = userInfo().uid === 0;
  const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-pg-'));
  if (asRoot) chownSync(dir, postgresIds().uid, postgresIds().gid);
  const asOwner = (binary: string, args: string[]): [string, string[]] =>
    asRoot ? ['runuser', ['-u', 'postgres', '--', binary, ...args]] : [binary, args];
  const data = join(dir, 'data');
  const pwfile = join(dir, 'pwfile');
  await run(...asOwner('sh', ['-c', `umask 077; echo postgres > ${pwfile}`]));
  await run(
    ...asOwner(join(bin, 'initdb'), [
      '-D',
      data,
      '-U',
      'postgres',
      '--auth-local=trust',
      '--auth-host=scram-sha-256',
      `--pwfile=${pwfile}`,
      '--no-sync',
    ]),
  );
  const port = await freePort();
  let server: GuardedProcess | undefined;
  const url = (name = 'postgres') => `postgres://postgres:postgres@127.0.0.1:${port}/${name}`;
  const startServer = async () => {
    const [binary, args] = asOwner(join(bin, 'postgres'), [
      '-D',
      data,
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${dir}`,
      '-c',
      'fsync=off',
      '-c',
      'max_connections=300',
    ]);
    server = startGuarded('postgres', binary, args, (line) => log(`postgres: ${line}`));
    await waitForConnections(url(), server, options.startTimeoutMs ?? 60_000);
  };
  const stopServer = async () => {
    if (!server) return;
    // Fast shutdown (SIGINT's meaning): sessions are ended, as when a database restarts.
    await run(...asOwner(join(bin, 'pg_ctl'), ['stop', '-D', data, '-m', 'fast', '-w'])).catch(
      () => undefined,
    );
    await server.stop();
    server = undefined;
  };
  try {
    await startServer();
  } catch (err) {
    await server?.stop();
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
  let stopping: Promise<void> | undefined;
  return {
    host: '127.0.0.1',
    port,
    url,
    async createDatabase(name) {
      const client = new pg.Client({ connectionString: url() });
      await client.connect();
      try {
        await client.query(`create role ${name} login password '${name}'`);
        await client.query(`create database ${name} owner ${name}`);
      } finally {
        await client.end();
      }
      return `postgres://${name}:${name}@127.0.0.1:${port}/${name}`;
    },
    stopServer,
    startServer,
    stop() {
      stopping ??= (async () => {
        await stopServer();
        rmSync(dir, { recursive: true, force: true });
      })();
      return stopping;
    },
  };
}

/** PG_BIN_DIR, else the newest major version under /usr/lib/postgresql. */
function postgresBinDir(): string {
  if (process.env.PG_BIN_DIR) return process.env.PG_BIN_DIR;
  const root = '/usr/lib/postgresql';
  const majors = existsSync(root)
    ? readdirSync(root)
        .filter((name) => existsSync(join(root, name, 'bin', 'initdb')))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  if (majors.length === 0) {
    throw new Error(
      'No PostgreSQL server binaries found (install Debian\'s "postgresql" package, or set ' +
        'PG_BIN_DIR to the folder holding initdb and postgres), or give DATABASE_URL.',
    );
  }
  return join(root, majors[0]!, 'bin');
}

/** uid and gid of the `postgres` OS user (Debian's package creates it), from /etc/passwd. */
function postgresIds(): { uid: number; gid: number } {
  const entry = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .map((line) => line.split(':'))
    .find((fields) => fields[0] === 'postgres');
  if (!entry) throw new Error('no "postgres" OS user to run PostgreSQL as (root cannot)');
  return { uid: Number(entry[2]), gid: Number(entry[3]) };
}

/** Polls `select 1` until it answers (the server takes a second or two to start). */
async function waitForConnections(
  url: string,
  server: GuardedProcess,
  timeoutMs: number,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (server.exitCode() !== undefined) {
      throw new Error(`PostgreSQL exited at start:\n${server.recentOutput()}`);
    }
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      return;
    } catch {
      await client.end().catch(() => undefined);
    }
    if (Date.now() > deadline) {
      throw new Error(`PostgreSQL did not accept connections in ${timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
