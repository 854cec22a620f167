/**
 * What the store's methods share (src/store/store.ts builds it once per {@link openStore}): the
 * database and its dialect, the clock, the change notifier, and the helpers that run a write in
 * a transaction and wake the waiters of what it changed.
 */
import type { Kysely, Selectable } from 'kysely';
import type { DialectName } from './database.js';
import type { OperationNotifier } from './operation-notifier.js';
import { advanceOperation } from './operations.js';
import type { Database, SandboxesTable } from './schema.js';
import type { OperationTransition } from './types.js';

/** The store's shared dependencies and transaction helpers. */
export interface StoreContext {
  db: Kysely<Database>;
  dialect: DialectName;
  /** The clock of created_at/updated_at/retired_at (StoreOptions.clock). */
  clock: () => Date;
  /** {@link clock} as ISO-8601. */
  now: () => string;
  /** Wakes this process's (and on PostgreSQL the other processes') waiters of a change key. */
  notifier: OperationNotifier;
  /** Runs `write` in a transaction, then wakes this process's waiters of what it changed. */
  writing<T>(write: (trx: Kysely<Database>, changed: Set<string>) => Promise<T>): Promise<T>;
  /**
   * Moves an operation forward inside `trx`. Returns the id to announce after the commit (the
   * notifier wakes local waiters and, on PostgreSQL, the other processes' ones); undefined when
   * `id` is undefined or nothing moved.
   */
  advanceIn(
    trx: Kysely<Database>,
    id: string | undefined,
    transition: OperationTransition,
    at: string,
    result?: Selectable<SandboxesTable>,
  ): Promise<string | undefined>;
  /** Adds `id` to `changed` when defined. */
  note(changed: Set<string>, id: string | undefined): void;
}

/** Builds the {@link StoreContext} of an open database. */
export function storeContext(
  db: Kysely<Database>,
  dialect: DialectName,
  clock: () => Date,
  notifier: OperationNotifier,
): StoreContext {
  return {
    db,
    dialect,
    clock,
    now: () => clock().toISOString(),
    notifier,
    async writing(write) {
      const changed = new Set<string>();
      const result = await db.transaction().execute((trx) => write(trx, changed));
      for (const id of changed) notifier.notify(id);
      return result;
    },
    async advanceIn(trx, id, transition, at, result) {
      if (id === undefined) return undefined;
      if (!(await advanceOperation(trx, id, transition, at, result))) return undefined;
      return id;
    },
    note(changed, id) {
      if (id !== undefined) changed.add(id);
    },
  };
}
