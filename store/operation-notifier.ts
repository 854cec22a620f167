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

/**
 * The in-process notifier; with `databaseUrl` also a PostgreSQL LISTEN connection (opened at
 * once, re-opened when it drops) that turns every process's `pg_notify` into local
 * notifications.
 */
export function createOperationNotifier(options: { databaseUrl?: string } = {}): OperationNotifier {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  let closed = false;
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
          clearTimeout(timer);
          emitter.off(id, onChange);
          emitter.off(EVERY_OPERATION, onChange);
          emitter.off('close', onClose);
          signal?.removeEventListener('abort', onClose);
          resolve(changed);
        };
        const onChange = () => finish(true);
        const onClose = () => finish(false);
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
      const client = listener;
      listener = undefined;
      await client?.end().catch(() => undefined);
    },
  };
}
