/**
 * The event feed's part of the store (docs/webhooks.md, "The event feed"): each kept webhook event (`webhook_events`)
 * gets the next number of one store-wide sequence (`seq`, migration 0021) as it is written, and a
 * tenant reads its events after a number. Numbers are taken one writer at a time (PostgreSQL: a
 * transaction-scoped advisory lock; SQLite: its write lock) and become visible in the order they
 * were taken, so a reader that saw number n never later finds a smaller one committed: a cursor
 * skips nothing. (A database sequence would not promise this: a later number may commit first.)
 */
import { createHash } from 'node:crypto';
import { sql, type Kysely, type Selectable } from 'kysely';
import {
  POD_LOST,
  sandboxToWire,
  type SandboxDeletionCause,
  type SandboxJsonSource,
  type WebhookEventType,
} from '../../contract/index.js';
import type { DialectName } from './database.js';
import type { Database, WebhookEventsTable } from './schema.js';

/** Key of the PostgreSQL advisory lock that orders event numbers (held until commit). */
export const EVENT_SEQUENCE_LOCK_KEY = 7_318_224_602;

/** A kept event as the feed serves it: the webhook's id and body, and its place. */
export interface FeedEventRecord {
  /** Its number in the store's sequence; increasing in the order events were written. */
  seq: number;
  /** `evt_…`, the webhook's `webhook-id`. */
  id: string;
  sandboxId: string;
  type: WebhookEventType;
  /** The exact JSON body a webhook delivery sends: `{type, timestamp, data}`. */
  payload: string;
}

/** Which of a tenant's events to read. */
export interface FeedQuery {
  /** Read events numbered above this (0: from the oldest kept). */
  afterSeq: number;
  /** Only these types; undefined or empty: every type. */
  types?: readonly string[];
  /** Only this sandbox's events. */
  sandboxId?: string;
  /** At most this many, oldest first. */
  limit: number;
}

/** A row to insert as the next event (`seq` is taken by {@link insertEvent}). */
export type NewEventRow = Omit<WebhookEventsTable, 'seq'>;

/**
 * The stable id of a transition's event: the same sandbox, generation and type give the same
 * id, so a retried step that emits again is de-duplicated (`webhook-id`).
 */
export function webhookEventId(sandbox: { id: string; generation: number }, type: string): string {
  const digest = createHash('sha256').update(`${sandbox.id}/${sandbox.generation}/${type}`);
  return `evt_${digest.digest('hex').slice(0, 32)}`;
}

/**
 * The body of a sandbox's event, as webhooks send it and the feed serves it:
 * `{type, timestamp, data}`, `data` the sandbox as `GET /v1/sandboxes/{id}` shows it, plus
 * `delete_cause` on a `sandbox.deleted` event.
 * @param deleteCause why it was deleted; only read for `sandbox.deleted`
 */
export function sandboxEventBody(
  sandbox: SandboxJsonSource & { updatedAt: string },
  type: WebhookEventType,
  deleteCause?: SandboxDeletionCause,
): { type: WebhookEventType; timestamp: string; data: Record<string, unknown> } {
  const data = sandboxToWire(sandbox) as unknown as Record<string, unknown>;
  if (type === 'sandbox.deleted') data.delete_cause = deleteCause ?? 'requested';
  return { type, timestamp: sandbox.updatedAt, data };
}

/**
 * Why a sandbox was deleted, for its `sandbox.deleted` event: `lost` when its pod was gone
 * before the delete (its failure is `pod_lost`, kept after the delete), else its delete
 * operation's cause (`expired`, or `requested` by a caller or when unknown).
 */
export function deletionCauseOf(
  sandbox: { failure: { code: string } | null },
  operationCause: string | null | undefined,
): SandboxDeletionCause {
  if (sandbox.failure?.code === POD_LOST) return 'lost';
  return operationCause === 'expired' ? 'expired' : 'requested';
}

/**
 * Inserts `row` as the next event of the sequence, inside `trx` (a transaction: on PostgreSQL the
 * number's lock is held until it commits). An id already kept changes nothing.
 * @returns whether it inserted
 */
export async function insertEvent(
  trx: Kysely<Database>,
  dialect: DialectName,
  row: NewEventRow,
): Promise<boolean> {
  if (dialect === 'postgres') {
    await sql`select pg_advisory_xact_lock(${sql.lit(EVENT_SEQUENCE_LOCK_KEY)})`.execute(trx);
  }
  // `where true` lets SQLite parse the upsert of an INSERT … SELECT (SQLite, "UPSERT").
  const result = await sql`
    insert into webhook_events (id, tenant, sandbox_id, type, payload, created_at, seq)
    select ${row.id}, ${row.tenant}, ${row.sandbox_id}, ${row.type}, ${row.payload},
           ${row.created_at}, coalesce(max(seq), 0) + 1
    from webhook_events where true
    on conflict (id) do nothing`.execute(trx);
  return (result.numAffectedRows ?? 0n) > 0n;
}

/** The tenant's events matching `query`, oldest first. */
export async function selectFeedEvents(
  db: Kysely<Database>,
  tenant: string,
  query: FeedQuery,
): Promise<FeedEventRecord[]> {
  let select = db
    .selectFrom('webhook_events')
    .select(['seq', 'id', 'sandbox_id', 'type', 'payload'])
    .where('tenant', '=', tenant)
    .where('seq', 'is not', null)
    .where('seq', '>', query.afterSeq);
  if (query.types && query.types.length > 0) select = select.where('type', 'in', [...query.types]);
  if (query.sandboxId !== undefined) select = select.where('sandbox_id', '=', query.sandboxId);
  const rows = await select.orderBy('seq').limit(query.limit).execute();
  return rows.map(toFeedEvent);
}

function toFeedEvent(
  row: Pick<Selectable<WebhookEventsTable>, 'id' | 'sandbox_id' | 'type' | 'payload' | 'seq'>,
): FeedEventRecord {
  return {
    seq: Number(row.seq),
    id: row.id,
    sandboxId: row.sandbox_id,
    type: row.type as WebhookEventType,
    payload: row.payload,
  };
}

/** The notifier key of a tenant's feed: woken when one of its events is written. */
export function feedChangeKey(tenant: string): string {
  return `events:${tenant}`;
}
