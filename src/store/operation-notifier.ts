/**
 * Operation change notifications, so a long-poll (`GET /v1/operations/{id}?wait=`) and the
 * synchronous create answer the moment an operation row changes, without polling the database.
 *
 * - In one process (SQLite: the embedded stack runs the API and the worker together) every
 *   committed operation write calls {@link OperationNotifier.notify}, which wakes the waiters.
 * - PostgreSQL (several API replicas and workers): after the commit, the id also goes to
 *   this process's sender, which publishes the ids committed meanwhile as one
 *   `pg_notify('durable_sandbox_operations', 'id,id,…')` at a time (coalesced: while one is in
 *   flight, the next batch gathers). Write transactions thus never NOTIFY: a notifying commit
 *   takes a database-wide lock until its commit record is flushed, which caps notifying commits
 *   near a few hundred per second (docs/production.md, "Operation notifications on
 *   PostgreSQL"); with one sender per process there are at most as many as round trips.
 *   Every process holds one `LISTEN` connection (on that channel and on the release before's
 *   `durable_sandbox_operation`, one id per notification, so a rolling upgrade misses no
 *   change the old release writes) and wakes its own waiters. When that connection drops it is
 *   re-opened after {@link LISTEN_RETRY_DELAY_MS}, and every waiter is woken once (a
 *   notification may have been missed; a woken waiter re-reads its row). A failed publish is
 *   retried after the same delay. A process that dies between a commit and its publish loses
 *   that notification: waiters elsewhere answer at their timeout instead (the synchronous
 *   create also awaits the workflow's result).
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

/** The PostgreSQL channel of operation changes: payload `id,id,…` (at most one batch). */
export const OPERATION_CHANNEL = 'durable_sandbox_operations';

/**
 * The channel of the release before (payload: one id, sent inside the writing transaction):
 * still listened to, so changes written by processes of that release wake waiters during a
 * rolling upgrade. Drop it once no such release runs.
 */
export const LEGACY_OPERATION_CHANNEL = 'durable_sandbox_operation';

/**
 * Largest payload of one notification, in bytes: PostgreSQL refuses 8000 and more
 * (NOTIFY, "payload … must be shorter than 8000 bytes").
 */
export const MAX_PAYLOAD_BYTES = 7_999;

/** Publishes one notification (e.g. `select pg_notify($channel, $payload)` on a pool). */
export type SendNotification = (channel: string, payload: string) => Promise<void>;

/** Pause before re-opening a dropped LISTEN connection, in ms. */
export const LISTEN_RETRY_DELAY_MS = 1_000;

/** How often a process with waiters asks SQLite whether another process committed, in ms. */
export const SQLITE_CHANGE_CHECK_MS = 100;

const EVERY_OPERATION = '*';

/** Wakes the waiters of an operation when it changes. */
export interface OperationNotifier {
  /**
   * Wakes this process's waiters of `id` (called after a committed write) and, on PostgreSQL,
   * queues it for the next coalesced notification to the other processes.
   */
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
  /** PostgreSQL: publishes one coalesced notification (`pg_notify(channel, payload)`). */
  send?: SendNotification;
  /**
   * SQLite: the connection's `PRAGMA data_version` (it moves when another connection, e.g.
   * another process, committed), asked every {@link SQLITE_CHANGE_CHECK_MS} while there are
   * waiters.
   */
  sqliteDataVersion?: () => number;
}

/**
 * Splits ids into payloads of at most {@link MAX_PAYLOAD_BYTES} (ids joined by `,`; operation
 * ids are `op_` and base-32 characters, never a comma).
 */
export function batchPayloads(ids: Iterable<string>): string[] {
  const payloads: string[] = [];
  let current = '';
  for (const id of ids) {
    const next = current === '' ? id : `${current},${id}`;
    if (Buffer.byteLength(next) > MAX_PAYLOAD_BYTES && current !== '') {
      payloads.push(current);
      current = id;
    } else current = next;
  }
  if (current !== '') payloads.push(current);
  return payloads;
}

/**
 * The in-process notifier; with `databaseUrl` also a PostgreSQL LISTEN connection (opened at
 * once, re-opened when it drops) that turns every process's notifications into local ones, and,
 * with `send`, the coalescing publisher of this process's changes; with `sqliteDataVersion`, a
 * check for other processes' SQLite commits while anyone waits.
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
  const unpublished = new Set<string>();
  let publishing: Promise<void> | undefined;

  /** Publishes what gathered, one notification at a time, until nothing is left. */
  async function publishAll(send: SendNotification): Promise<void> {
    while (unpublished.size > 0) {
      const [payload] = batchPayloads(unpublished);
      const ids = (payload ?? '').split(',');
      for (const id of ids) unpublished.delete(id);
      try {
        await send(OPERATION_CHANNEL, payload ?? '');
      } catch {
        if (closed) return;
        for (const id of ids) unpublished.add(id);
        await new Promise((resolve) => setTimeout(resolve, LISTEN_RETRY_DELAY_MS).unref());
      }
    }
  }

  function publish(id: string): void {
    if (!options.send) return;
    unpublished.add(id);
    publishing ??= publishAll(options.send).finally(() => (publishing = undefined));
  }

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
      const ids =
        message.channel === OPERATION_CHANNEL ? message.payload?.split(',') : [message.payload];
      for (const id of ids ?? []) if (id) emitter.emit(id);
    });
    listener = client;
    try {
      await client.connect();
      await client.query(`LISTEN ${OPERATION_CHANNEL}; LISTEN ${LEGACY_OPERATION_CHANNEL}`);
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
      publish(id);
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
      // What was committed is still announced (a failed publish is not retried once closed).
      await publishing;
      emitter.emit('close');
      if (otherCommits) clearInterval(otherCommits.timer);
      otherCommits = undefined;
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
