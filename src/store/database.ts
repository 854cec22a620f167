/**
 * Opens the store's database: SQLite (better-sqlite3) by default, PostgreSQL (a `pg` Pool) when
 * a `postgres://` URL is given. Both sit behind one `Kysely<Database>`, so every query in this
 * folder is written once.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import SQLite from 'better-sqlite3';
import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import type { Database } from './schema.js';
import { SharedFileSqliteDialect } from './sqlite-dialect.js';
import { withPreparedStatements } from './statement-cache.js';

/** Which SQL engine is behind the connection. */
export type DialectName = 'sqlite' | 'postgres';

/** An open database. */
export interface DatabaseHandle {
  db: Kysely<Database>;
  dialect: DialectName;
  /**
   * SQLite files only: the connection's `PRAGMA data_version`, which moves when another
   * connection (another process) committed (src/store/operation-notifier.ts).
   */
  sqliteDataVersion?: () => number;
}

/** Thrown by {@link openDatabase} for options that name no usable database. */
export class StoreOptionsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StoreOptionsError';
  }
}

/** How long a SQLite statement waits for another process's lock before SQLITE_BUSY, in ms. */
export const SQLITE_BUSY_TIMEOUT_MS = 5_000;

/** Size of the PostgreSQL connection pool. */
export const POSTGRES_POOL_SIZE = 10;

/**
 * Opens (but does not migrate) the database.
 * @param options `databaseUrl` (`postgres://` or `postgresql://`) wins over `sqliteFile`
 * @throws StoreOptionsError when neither is given or the URL is not a PostgreSQL URL
 */
export function openDatabase(options: {
  databaseUrl?: string;
  sqliteFile?: string;
}): DatabaseHandle {
  if (options.databaseUrl !== undefined && options.databaseUrl !== '') {
    if (!/^postgres(ql)?:\/\//.test(options.databaseUrl)) {
      throw new StoreOptionsError('databaseUrl must start with postgres:// or postgresql://');
    }
    return { db: openPostgres(options.databaseUrl), dialect: 'postgres' };
  }
  if (options.sqliteFile !== undefined && options.sqliteFile !== '') {
    return { ...openSqlite(options.sqliteFile), dialect: 'sqlite' };
  }
  throw new StoreOptionsError('either databaseUrl or sqliteFile is required');
}

function openPostgres(connectionString: string): Kysely<Database> {
  const pool = new pg.Pool({ connectionString, max: POSTGRES_POOL_SIZE });
  // An idle client that loses its server emits 'error' on the pool; unhandled, that would end
  // the process. The next query fails instead (and ping() reports it).
  pool.on('error', () => {});
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/**
 * Switches the file to WAL, retrying for up to SQLITE_BUSY_TIMEOUT_MS while another process (an
 * API and a worker started together on one DATA_DIR) holds the lock the switch needs: SQLite
 * answers that pragma SQLITE_BUSY at once, without its busy handler.
 * @throws the driver's error when the lock outlasts the timeout, or for any other error
 */
function enableWal(database: SQLite.Database): void {
  const deadlineMs = Date.now() + SQLITE_BUSY_TIMEOUT_MS;
  for (;;) {
    try {
      database.pragma('journal_mode = WAL');
      return;
    } catch (err) {
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadlineMs) throw err;
      // A synchronous pause: the store is opened before anything else runs.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 25);
    }
  }
}

function openSqlite(file: string): Pick<DatabaseHandle, 'db' | 'sqliteDataVersion'> {
  const inMemory = file === ':memory:';
  if (!inMemory) mkdirSync(dirname(resolve(file)), { recursive: true });
  const database = new SQLite(file);
  database.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  if (!inMemory) enableWal(database);
  database.pragma('foreign_keys = ON');
  return {
    db: new Kysely<Database>({
      dialect: new SharedFileSqliteDialect(file, { database: withPreparedStatements(database) }),
    }),
    sqliteDataVersion: inMemory
      ? undefined
      : () => (database.open ? (database.pragma('data_version', { simple: true }) as number) : 0),
  };
}
