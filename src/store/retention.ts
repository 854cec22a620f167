/**
 * Rows that age out (docs/configuration.md, "Retention"): one bounded purge per kind of row.
 * Each call deletes at most `limit` rows of one kind, older than a cutoff, in one statement (the
 * delivery records' kind: two statements, together at most `limit`), walking an index
 * (migrations 0009, 0013, 0023) so a batch costs about what it deletes. Nothing unfinished is
 * purged: a sandbox only once `deleted`, `failed` or `lost` with no operation of it still running, an
 * operation only once `finished`, an event and its per-endpoint states only once no endpoint
 * still waits for it or is delivering it (a state unchanged for WEBHOOK_GIVEN_UP_AFTER_MS is
 * given up), and never the newest
 * event, whose number the next event's is counted from (src/store/event-feed.ts); an event purge
 * records each tenant's highest purged number (`event_feed_horizons`). A sandbox's
 * executions and labels go with it (foreign keys, `on delete cascade`).
 * Statements are written once for SQLite and PostgreSQL: `delete … where key in (select key …
 * limit n)`, as neither engine's `delete … limit` is portable.
 */
import { sql, type Kysely } from 'kysely';
import { WEBHOOK_GIVEN_UP_AFTER_MS, type RetentionKind } from '../../contract/index.js';
import type { Database } from './schema.js';

/** The retention part of the store. */
export interface RetentionStore {
  /**
   * Deletes at most `limit` rows of `kind` that aged out before `before`.
   * @param before ISO-8601 UTC cutoff: a row's age is its `updated_at` (sandboxes), `end_time`
   *   (operations), `created_at` (events, keys, delivery attempts) or `emitted_at` (delivery
   *   states)
   * @param limit rows per batch, a positive integer
   * @returns how many rows it deleted (fewer than `limit`: nothing more is due)
   * @throws the driver's error when the database fails (nothing of the batch is deleted)
   */
  purgeBatch(kind: RetentionKind, before: string, limit: number): Promise<number>;
  /**
   * The highest number of `tenant`'s events a purge deleted, or undefined when none was: a feed
   * cursor of that tenant before it may have lost events (docs/api.md, `cursor_expired`); one at
   * or after it has lost none, whatever other tenants' purges deleted.
   */
  purgedThroughSeq(tenant: string): Promise<number | undefined>;
}

/**
 * Statuses of a per-endpoint delivery state that still wait for, or run, a delivery; one not
 * changed for WEBHOOK_GIVEN_UP_AFTER_MS has outlived every retry and is given up.
 */
const UNFINISHED_DELIVERY = ['pending', 'queued', 'delivering'] as const;

const count = (result: { numAffectedRows?: bigint }): number =>
  Number(result.numAffectedRows ?? 0n);

async function purgeSandboxes(db: Kysely<Database>, before: string, limit: number) {
  // Index sandboxes_state_updated_at (state, updated_at, id); the not-exists probe uses
  // operations_tenant_sandbox (tenant, sandbox_id, …).
  return count(
    await sql`
      delete from sandboxes where id in (
        select s.id from sandboxes s
        where s.state in ('deleted', 'failed', 'lost') and s.updated_at < ${before}
          and not exists (
            select 1 from operations o
            where o.tenant = s.tenant and o.sandbox_id = s.id and o.phase <> 'finished')
        limit ${limit})`.execute(db),
  );
}

async function purgeOperations(db: Kysely<Database>, before: string, limit: number) {
  // Index operations_phase_end_time (migration 0023).
  return count(
    await sql`
      delete from operations where id in (
        select id from operations
        where phase = 'finished' and end_time < ${before}
        limit ${limit})`.execute(db),
  );
}

async function purgeIdempotencyKeys(db: Kysely<Database>, before: string, limit: number) {
  // Index idempotency_keys_created_at (migration 0023).
  return count(
    await sql`
      delete from idempotency_keys where (tenant, key) in (
        select tenant, key from idempotency_keys
        where created_at < ${before}
        limit ${limit})`.execute(db),
  );
}

async function purgeEvents(db: Kysely<Database>, before: string, limit: number, now: Date) {
  const givenUpBefore = new Date(now.getTime() - WEBHOOK_GIVEN_UP_AFTER_MS).toISOString();
  // One transaction: each tenant's horizon moves with the deletion of its events, so a feed
  // reader that misses a purged event also sees the horizon that refuses its cursor.
  return db.transaction().execute(async (trx) => {
    // Index webhook_events_created_at; the probe uses webhook_endpoint_events_event (0023).
    const { rows } = await sql<{ id: string; tenant: string; seq: number | string | null }>`
      select e.id, e.tenant, e.seq from webhook_events e
      where e.created_at < ${before}
        and (e.seq is null or e.seq < (select max(seq) from webhook_events))
        and not exists (
          select 1 from webhook_endpoint_events w
          where w.event_id = e.id
            and w.status in (${sql.join(UNFINISHED_DELIVERY.map((s) => sql.lit(s)))})
            and w.updated_at >= ${givenUpBefore})
      order by e.created_at
      limit ${limit}`.execute(trx);
    if (rows.length === 0) return 0;
    const horizons = new Map<string, number>();
    for (const row of rows) {
      if (row.seq === null) continue;
      horizons.set(row.tenant, Math.max(horizons.get(row.tenant) ?? 0, Number(row.seq)));
    }
    for (const [tenant, seq] of horizons) {
      await trx
        .insertInto('event_feed_horizons')
        .values({ tenant, purged_through_seq: seq })
        .onConflict((conflict) =>
          conflict.column('tenant').doUpdateSet({
            purged_through_seq: sql`case when event_feed_horizons.purged_through_seq > excluded.purged_through_seq
              then event_feed_horizons.purged_through_seq else excluded.purged_through_seq end`,
          }),
        )
        .execute();
    }
    const deleted = await trx
      .deleteFrom('webhook_events')
      .where(
        'id',
        'in',
        rows.map((row) => row.id),
      )
      .executeTakeFirst();
    return Number(deleted.numDeletedRows);
  });
}

async function purgeDeliveries(db: Kysely<Database>, before: string, limit: number, now: Date) {
  const givenUpBefore = new Date(now.getTime() - WEBHOOK_GIVEN_UP_AFTER_MS).toISOString();
  // Index webhook_deliveries_created_at (0023).
  const attempts = count(
    await sql`
      delete from webhook_deliveries where id in (
        select id from webhook_deliveries where created_at < ${before} limit ${limit})`.execute(db),
  );
  if (attempts >= limit) return attempts;
  // Index webhook_endpoint_events_emitted (0023); only finished states (or given up).
  const states = count(
    await sql`
      delete from webhook_endpoint_events where (endpoint_id, event_id) in (
        select endpoint_id, event_id from webhook_endpoint_events
        where emitted_at < ${before}
          and (status not in (${sql.join(UNFINISHED_DELIVERY.map((s) => sql.lit(s)))})
               or updated_at < ${givenUpBefore})
        limit ${limit - attempts})`.execute(db),
  );
  return attempts + states;
}

/**
 * The retention part of a store over `db`.
 * @param clock now, for what counts as a given-up delivery
 */
export function retentionStore(db: Kysely<Database>, clock: () => Date): RetentionStore {
  return {
    async purgeBatch(kind, before, limit) {
      if (!Number.isSafeInteger(limit) || limit <= 0) {
        throw new RangeError(`limit must be a positive integer, got ${limit}`);
      }
      switch (kind) {
        case 'sandboxes':
          return purgeSandboxes(db, before, limit);
        case 'operations':
          return purgeOperations(db, before, limit);
        case 'events':
          return purgeEvents(db, before, limit, clock());
        case 'idempotency_keys':
          return purgeIdempotencyKeys(db, before, limit);
        case 'webhook_deliveries':
          return purgeDeliveries(db, before, limit, clock());
      }
    },
    async purgedThroughSeq(tenant) {
      const row = await db
        .selectFrom('event_feed_horizons')
        .select('purged_through_seq')
        .where('tenant', '=', tenant)
        .executeTakeFirst();
      return row === undefined ? undefined : Number(row.purged_through_seq);
    },
  };
}
