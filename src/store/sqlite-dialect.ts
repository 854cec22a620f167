/**
 * The SQLite dialect the store uses: kysely's `SqliteDialect` (better-sqlite3) with three
 * changes that make one database file safe to share between processes (api and worker) and
 * between stores in one process:
 *
 * - Transactions start with `BEGIN IMMEDIATE`: they take the write lock at once (waiting up to
 *   busy_timeout), so a read-then-write transaction never fails with SQLITE_BUSY because another
 *   process wrote in between.
 * - Migrations run in a transaction (SQLite has transactional DDL; kysely's adapter says it has
 *   not, and then runs them with no lock at all), so two processes opening a new file at once
 *   apply each migration exactly once.
 * - Every store in this process that opens the same file takes turns on one in-process lock.
 *   better-sqlite3 waits for a busy database synchronously, blocking the event loop; without
 *   this lock a second store could block the very loop the first one needs to finish its
 *   transaction.
 */
import { resolve } from 'node:path';
import {
  CompiledQuery,
  SqliteAdapter,
  SqliteDialect,
  SqliteDriver,
  type DatabaseConnection,
  type DialectAdapter,
  type Driver,
  type SqliteDialectConfig,
} from 'kysely';

/** SQLite with immediate transactions, transactional migrations and a per-file process lock. */
export class SharedFileSqliteDialect extends SqliteDialect {
  readonly #config: SqliteDialectConfig;
  readonly #fileLock: AsyncLock;

  /**
   * @param file the database's path (`:memory:` databases get a lock of their own)
   * @param config kysely's SQLite config; `database` must be the connection opened on `file`
   */
  constructor(file: string, config: SqliteDialectConfig) {
    super(config);
    this.#config = config;
    this.#fileLock = lockForFile(file);
  }

  override createDriver(): Driver {
    return new SharedFileSqliteDriver(this.#config, this.#fileLock);
  }

  override createAdapter(): DialectAdapter {
    return new TransactionalDdlSqliteAdapter();
  }
}

class TransactionalDdlSqliteAdapter extends SqliteAdapter {
  override get supportsTransactionalDdl(): boolean {
    return true;
  }
}

class SharedFileSqliteDriver extends SqliteDriver {
  readonly #fileLock: AsyncLock;
  #release: (() => void) | undefined;

  constructor(config: SqliteDialectConfig, fileLock: AsyncLock) {
    super(config);
    this.#fileLock = fileLock;
  }

  override async acquireConnection(): Promise<DatabaseConnection> {
    // The base driver hands out its single connection to one caller at a time; take the file
    // lock only once holding it, so this driver holds at most one file lock.
    const connection = await super.acquireConnection();
    try {
      this.#release = await this.#fileLock.acquire();
    } catch (error) {
      await super.releaseConnection();
      throw error;
    }
    return connection;
  }

  override async releaseConnection(): Promise<void> {
    const release = this.#release;
    this.#release = undefined;
    release?.();
    await super.releaseConnection();
  }

  override async beginTransaction(connection: DatabaseConnection): Promise<void> {
    await connection.executeQuery(CompiledQuery.raw('begin immediate'));
  }
}

/** A FIFO lock for async code: `acquire()` resolves with the function that releases it. */
class AsyncLock {
  #tail: Promise<void> = Promise.resolve();

  acquire(): Promise<() => void> {
    let release!: () => void;
    const held = new Promise<void>((resolveHeld) => {
      release = resolveHeld;
    });
    const turn = this.#tail.then(() => release);
    this.#tail = this.#tail.then(() => held);
    return turn;
  }
}

const fileLocks = new Map<string, AsyncLock>();

function lockForFile(file: string): AsyncLock {
  if (file === ':memory:') return new AsyncLock();
  const path = resolve(file);
  let lock = fileLocks.get(path);
  if (lock === undefined) {
    lock = new AsyncLock();
    fileLocks.set(path, lock);
  }
  return lock;
}
