/**
 * Operation change notifications, so a long-poll (`GET /v1/operations/{id}?wait=`) and the
 * synchronous create answer the moment an operation row changes, without polling the database.
 *
 * - In one process (SQLite: the embedded stack runs the API and the worker together) every
 *   committed operation write calls {@link OperationNotifier.notify}, which wakes the waiters.
 * - PostgreSQL (several API replicas and workers): each operation write also runs
 *   `pg_notify('durable_sandbox_operation', id)` inside its transaction, so the notification
 *   leaves on commit; every process holds one `LISTEN` connection and wakes its own waiters.
 *   When that connection drops it is re-opened after {@link LISTEN_RETRY_DELAY_MS}, and every
 *   waiter is woken once (a notification may have been missed; a woken waiter re-reads its row).
 * - SQLite shared by separate processes (`npm run api` and `npm run worker` on one file): SQLite
 *   has no notifications, but it says cheaply whether another connection committed since it last
 *   asked (`PRAGMA data_version`, a counter kept in the process's own memory-mapped WAL index;
 *   no disk or network traffic). While this process has waiters it asks every
 *   {@link SQLITE_CHANGE_CHECK_MS} and wakes every waiter when the counter moved. Commits of this
 *   process's own connection do not move it (they notify directly). Source: SQLite, "PRAGMA
 *   data_version".
 *
 * A notification says only "this operation changed"; the waiter reads the row itself, so a lost
 * or duplicated notification costs at most one re-read or one wait until the timeout.
 */
import { EventEmitter } from 'node:events';
import pg from 'pg';

/** The PostgreSQL notification channel of operation changes. */
export const OPERATION_CHANNEL = 'durable_sandbox_operation';

/** Pause before re-opening a dropped LISTEN connection, in ms. */
export const LISTEN_RETRY_DELAY_MS = 1_000;

/** How often a process with waiters asks SQLite whether another process committed, in ms. */
export const SQLITE_CHANGE_CHECK_MS = 100;

const EVERY_OPERATION = '*';

/** Wakes the waiters of an operation when it changes. */
export interface OperationNotifier {
  /** Wakes this process's waiters of `id` (called after a committed write). */
  notify(id: string): void;
  /**
   * Resolves true when `id` changes, false at `timeoutMs` or when `signal` aborts. Starts
   * listening before it returns its promise, so a change after the call is never missed.
   */
  waitForChange(id: string, timeoutMs: number, signal?: AbortSignal): Promise<boolean>;
  /** Stops listening; waiters resolve false. */
  close(): Promise<void>;
}

/** Options of {@link createOperationNotifier}. */
export interface OperationNotifierOptions {
  /** PostgreSQL: LISTEN on this database for other processes' changes. */
  databaseUrl?: string;
  /**
   * SQLite: the connection's `PRAGMA data_version` (it moves when another connection, e.g.
   * another process, committed), asked every {@link SQLITE_CHANGE_CHECK_MS} while there are
   * waiters.
   */
  sqliteDataVersion?: () => number;
}

/**
 * The in-process notifier; with `databaseUrl` also a PostgreSQL LISTEN connection (opened at
 * once, re-opened when it drops) that turns every process's `pg_notify` into local
 * notifications; with `sqliteDataVersion`, a check for other processes' SQLite commits while
 * anyone waits.
 */
export function createOperationNotifier(options: OperationNotifierOptions = {}): OperationNotifier {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  let closed = false;
  let waiters = 0;
  let otherCommits: { timer: NodeJS.Timeout; version: number } | undefined;

  /** Starts checking for other processes' commits (first waiter), baseline taken now. */
  function watchOtherCommits(): void {
    const dataVersion = options.sqliteDataVersion;
    if (!dataVersion || otherCommits) return;
    const timer = setInterval(() => {
      const version = dataVersion();
      if (otherCommits && version !== otherCommits.version) {
        otherCommits.version = version;
        emitter.emit(EVERY_OPERATION);
      }
    }, SQLITE_CHANGE_CHECK_MS);
    timer.unref();
    otherCommits = { timer, version: dataVersion() };
  }

  /** Stops checking once nobody waits. */
  function unwatchOtherCommits(): void {
    if (waiters > 0 || !otherCommits) return;
    clearInterval(otherCommits.timer);
    otherCommits = undefined;
  }
  let listener: pg.Client | undefined;
  let connecting: Promise<void> | undefined;

  async function listen(url: string): Promise<void> {
    const client = new pg.Client({ connectionString: url });
    const reopen = () => {
      if (listener !== client) return;
      listener = undefined;
      connecting = undefined;
      // A notification may have been lost while the connection was down: wake everyone.
      emitter.emit(EVERY_OPERATION);
      if (!closed) setTimeout(() => void ensureListening(), LISTEN_RETRY_DELAY_MS).unref();
    };
    client.on('error', reopen);
    client.on('end', reopen);
    client.on('notification', (message) => {
      if (message.payload) emitter.emit(message.payload);
    });
    listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${OPERATION_CHANNEL}`);
    } catch {
      reopen();
      await client.end().catch(() => undefined);
    }
  }

  function ensureListening(): Promise<void> {
    if (closed || !options.databaseUrl) return Promise.resolve();
    connecting ??= listen(options.databaseUrl);
    return connecting;
  }

  // Listen from the start, so even the first wait of the process misses no change.
  void ensureListening();

  return {
    notify(id) {
      emitter.emit(id);
    },

    async waitForChange(id, timeoutMs, signal) {
      if (closed || signal?.aborted) return false;
      return new Promise<boolean>((resolve) => {
        const finish = (changed: boolean) => {
          if (done) return;
          done = true;
          waiters -= 1;
          unwatchOtherCommits();
          clearTimeout(timer);
          emitter.off(id, onChange);
          emitter.off(EVERY_OPERATION, onChange);
          emitter.off('close', onClose);
          signal?.removeEventListener('abort', onClose);
          resolve(changed);
        };
        let done = false;
        const onChange = () => finish(true);
        const onClose = () => finish(false);
        waiters += 1;
        watchOtherCommits();
        const timer = setTimeout(onClose, timeoutMs);
        emitter.on(id, onChange);
        emitter.on(EVERY_OPERATION, onChange);
        emitter.on('close', onClose);
        signal?.addEventListener('abort', onClose);
        void ensureListening();
      });
    },

    async close() {
      closed = true;
      emitter.emit('close');
      if (otherCommits) clearInterval(otherCommits.timer);
      otherCommits = undefined;
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
