/**
 * The warm-pool part of the store (`store.warmPools`; migration 0015, docs/architecture.md
 * "Warm pools"): the size the operator's scale route set, the claims counted, and the last
 * reconcile's status, per template. Pools belong to no tenant; only the operator routes and the
 * worker read them.
 */
import { sql, type Kysely, type Selectable } from 'kysely';
import type { WarmPoolStatus } from '../../contract/index.js';
import type { Database, WarmPoolsTable } from './schema.js';

/** A pool as the store holds it. */
export interface WarmPoolRecord {
  template: string;
  /** The scale route's size; undefined: the template's configured one. */
  size?: number;
  /** Pods creates have claimed from it, in all. */
  claimed: number;
  /** The last reconcile's status and when it was observed (ISO-8601). */
  status?: WarmPoolStatus;
  observedAt?: string;
}

/** `store.warmPools`. Every method rejects with the driver's error when the database fails. */
export interface WarmPoolStore {
  /** The pool's row, or undefined when nothing was recorded for it yet. */
  get(template: string): Promise<WarmPoolRecord | undefined>;
  /** Every pool recorded, by template. */
  list(): Promise<WarmPoolRecord[]>;
  /** Sets the size (the scale route); null goes back to the template's configured size. */
  setSize(template: string, size: number | null): Promise<void>;
  /** Counts one claim. */
  recordClaim(template: string): Promise<void>;
  /** Stores a reconcile's status. */
  recordStatus(status: WarmPoolStatus): Promise<void>;
  /** Records a pool pod this installation made (after its create answered). */
  recordMadePod(pod: {
    uid: string;
    template: string;
    name: string;
    fingerprint: string;
  }): Promise<void>;
  /** The fingerprint a pod this installation made was made from, or undefined (not made here). */
  fingerprintOf(uid: string): Promise<string | undefined>;
  /** The pool pods of `template` this installation made: uid -> fingerprint. */
  madePods(template: string): Promise<Map<string, string>>;
  /**
   * Forgets the made pods of `template` recorded before `before` (ISO-8601) whose uid is not in
   * `keep` (claimed or deleted since).
   */
  forgetMadePods(template: string, keep: readonly string[], before: string): Promise<void>;
}

function recordOf(row: Selectable<WarmPoolsTable>): WarmPoolRecord {
  return {
    template: row.template,
    ...(row.size === null ? {} : { size: Number(row.size) }),
    claimed: Number(row.claimed),
    ...(row.status === null ? {} : { status: JSON.parse(row.status) as WarmPoolStatus }),
    ...(row.observed_at === null ? {} : { observedAt: row.observed_at }),
  };
}

/** Builds {@link WarmPoolStore} over the store's database and clock (ISO-8601). */
export function warmPoolStore(db: Kysely<Database>, now: () => string): WarmPoolStore {
  const upsert = (template: string, set: Partial<WarmPoolsTable>) =>
    db
      .insertInto('warm_pools')
      .values({
        template,
        size: null,
        claimed: 0,
        status: null,
        observed_at: null,
        updated_at: now(),
        ...set,
      })
      .onConflict((conflict) =>
        conflict.column('template').doUpdateSet({ ...set, updated_at: now() }),
      )
      .execute();
  return {
    async get(template) {
      const row = await db
        .selectFrom('warm_pools')
        .selectAll()
        .where('template', '=', template)
        .executeTakeFirst();
      return row ? recordOf(row) : undefined;
    },
    async list() {
      const rows = await db.selectFrom('warm_pools').selectAll().orderBy('template').execute();
      return rows.map(recordOf);
    },
    async setSize(template, size) {
      await upsert(template, { size });
    },
    async recordClaim(template) {
      await db
        .insertInto('warm_pools')
        .values({
          template,
          size: null,
          claimed: 1,
          status: null,
          observed_at: null,
          updated_at: now(),
        })
        .onConflict((conflict) =>
          conflict
            .column('template')
            .doUpdateSet({ claimed: sql`warm_pools.claimed + 1`, updated_at: now() }),
        )
        .execute();
    },
    async recordMadePod(pod) {
      await db
        .insertInto('warm_pods')
        .values({ ...pod, created_at: now() })
        .onConflict((conflict) => conflict.column('uid').doNothing())
        .execute();
    },
    async fingerprintOf(uid) {
      const row = await db
        .selectFrom('warm_pods')
        .select('fingerprint')
        .where('uid', '=', uid)
        .executeTakeFirst();
      return row?.fingerprint;
    },
    async madePods(template) {
      const rows = await db
        .selectFrom('warm_pods')
        .select(['uid', 'fingerprint'])
        .where('template', '=', template)
        .execute();
      return new Map(rows.map((row) => [row.uid, row.fingerprint]));
    },
    async forgetMadePods(template, keep, before) {
      const kept = new Set(keep);
      const rows = await db
        .selectFrom('warm_pods')
        .select('uid')
        .where('template', '=', template)
        .where('created_at', '<', before)
        .execute();
      const gone = rows.map((row) => row.uid).filter((uid) => !kept.has(uid));
      for (let i = 0; i < gone.length; i += 500) {
        await db
          .deleteFrom('warm_pods')
          .where('uid', 'in', gone.slice(i, i + 500))
          .execute();
      }
    },
    async recordStatus(status) {
      const at = now();
      await upsert(status.template, { status: JSON.stringify(status), observed_at: at });
    },
  };
}
