/**
 * Webhook endpoints and their delivery attempts (docs/webhooks.md, migration 0013). Every read
 * a tenant makes names its tenant, so one tenant never sees another's endpoints; the worker's
 * reads (which endpoints hear an event, an endpoint's signing secrets) are by id.
 */
import { openSecret, sealSecret, type SecretKeyRing } from '../webhooks/secret-box.js';
import { sql, type Kysely, type Selectable } from 'kysely';
import {
  MAX_WEBHOOK_ENDPOINTS_PER_TENANT,
  type WebhookDeliveryRecord,
  type WebhookDeliveryStatus,
  type WebhookEndpointRecord,
  type WebhookEventType,
} from '../../contract/index.js';
import type {
  Database,
  WebhookDeliveriesTable,
  WebhookEndpointsTable,
  WebhookEventsTable,
} from './schema.js';
import type { DialectName } from './database.js';
import { insertEvent } from './event-feed.js';
import { webhookEventStates, type WebhookEventStates } from './webhook-event-states.js';

/** A new endpoint, with its first secret (the caller generated both id and secret). */
export interface NewWebhookEndpoint {
  id: string;
  tenant: string;
  url: string;
  eventTypes: WebhookEventType[];
  secret: string;
}

/** What a delivery needs of its endpoint: where to post and the secrets that sign (newest first). */
export interface WebhookTarget {
  tenant: string;
  url: string;
  eventTypes: WebhookEventType[];
  /** The current secret, then the previous one while its grace period lasts. */
  secrets: string[];
}

/** An emitted event as the store keeps it: `payload` is the exact body a delivery sends. */
export interface StoredWebhookEvent {
  id: string;
  tenant: string;
  sandboxId: string;
  type: WebhookEventType;
  payload: string;
}

/** Thrown by {@link WebhookStore.createEndpoint} when the tenant has the most endpoints allowed. */
export class TooManyWebhookEndpointsError extends Error {
  constructor(readonly limit: number) {
    super(`a tenant may register at most ${limit} webhook endpoints`);
    this.name = 'TooManyWebhookEndpointsError';
  }
}

/**
 * The webhook part of the store (`store.webhooks`); where each event stands for each endpoint is
 * in src/store/webhook-event-states.ts.
 */
export interface WebhookStore extends WebhookEventStates {
  /**
   * Registers an endpoint.
   * @throws TooManyWebhookEndpointsError when the tenant already has
   *   {@link MAX_WEBHOOK_ENDPOINTS_PER_TENANT}
   */
  createEndpoint(input: NewWebhookEndpoint): Promise<WebhookEndpointRecord>;
  /** The tenant's endpoints, oldest first. */
  listEndpoints(tenant: string): Promise<WebhookEndpointRecord[]>;
  /** The tenant's endpoint; undefined when unknown or another tenant's. */
  getEndpoint(tenant: string, id: string): Promise<WebhookEndpointRecord | undefined>;
  /**
   * Removes the tenant's endpoint, its delivery records and its events' states; deliveries in flight stop at their
   * next attempt (the endpoint is gone).
   * @returns whether it existed
   */
  deleteEndpoint(tenant: string, id: string): Promise<boolean>;
  /**
   * Makes `secret` the endpoint's current secret; the old one keeps signing until
   * `previousExpiresAt` (ISO-8601), so receivers verify either during the switch.
   * @returns the endpoint, or undefined when unknown or another tenant's
   */
  rotateSecret(
    tenant: string,
    id: string,
    secret: string,
    previousExpiresAt: string,
  ): Promise<WebhookEndpointRecord | undefined>;
  /** Ids of the tenant's endpoints subscribed to `eventType`. */
  endpointsFor(tenant: string, eventType: WebhookEventType): Promise<string[]>;
  /**
   * The endpoint's URL and its signing secrets valid at `at` (ISO-8601); undefined when the
   * endpoint is gone.
   */
  target(id: string, at: string): Promise<WebhookTarget | undefined>;
  /**
   * Keeps an emitted event for its deliveries and the event feed (src/store/event-feed.ts: it takes
   * the next number of the feed), then wakes the tenant's feed waiters; a second call with the
   * same id changes nothing (the first body and number stay). Old events and their states are
   * purged by the retention Schedule in bounded batches (src/store/retention.ts), not here.
   */
  recordEvent(event: StoredWebhookEvent): Promise<void>;
  /** The event with this id; undefined when unknown or forgotten. */
  getEvent(id: string): Promise<StoredWebhookEvent | undefined>;
  /** Records one delivery attempt. */
  recordDelivery(input: Omit<WebhookDeliveryRecord, 'createdAt'>): Promise<void>;
  /** The endpoint's attempts, newest first, at most `limit`; [] for another tenant's endpoint. */
  listDeliveries(
    tenant: string,
    endpointId: string,
    limit: number,
  ): Promise<WebhookDeliveryRecord[]>;
}

/** How the webhook store numbers events for the feed and says one was written. */
export interface EventFeedWriting {
  dialect: DialectName;
  /** Called after an event of `tenant` was committed (wakes the feed's long-polls). */
  onEvent(tenant: string): void;
}

/** Builds the webhook store over the store's database; `now` gives ISO-8601 UTC. */
export function webhookStore(
  db: Kysely<Database>,
  now: () => string,
  secretKeys: SecretKeyRing | undefined,
  feed: EventFeedWriting,
): WebhookStore {
  const owned = (tenant: string, id: string) =>
    db
      .selectFrom('webhook_endpoints')
      .selectAll()
      .where('tenant', '=', tenant)
      .where('id', '=', id);

  return {
    ...webhookEventStates(db, now),

    async createEndpoint(input) {
      return db.transaction().execute(async (trx) => {
        const { count } = await trx
          .selectFrom('webhook_endpoints')
          .select((eb) => eb.fn.countAll<number | string>().as('count'))
          .where('tenant', '=', input.tenant)
          .executeTakeFirstOrThrow();
        if (Number(count) >= MAX_WEBHOOK_ENDPOINTS_PER_TENANT) {
          throw new TooManyWebhookEndpointsError(MAX_WEBHOOK_ENDPOINTS_PER_TENANT);
        }
        const at = now();
        const row: WebhookEndpointsTable = {
          id: input.id,
          tenant: input.tenant,
          url: input.url,
          event_types: JSON.stringify(input.eventTypes),
          secret: sealSecret(input.secret, secretKeys),
          previous_secret: null,
          previous_secret_expires_at: null,
          created_at: at,
          updated_at: at,
        };
        await trx.insertInto('webhook_endpoints').values(row).execute();
        return toEndpoint(row);
      });
    },

    async listEndpoints(tenant) {
      const rows = await db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('tenant', '=', tenant)
        .orderBy('created_at')
        .orderBy('id')
        .execute();
      return rows.map(toEndpoint);
    },

    async getEndpoint(tenant, id) {
      const row = await owned(tenant, id).executeTakeFirst();
      return row && toEndpoint(row);
    },

    async deleteEndpoint(tenant, id) {
      return db.transaction().execute(async (trx) => {
        const result = await trx
          .deleteFrom('webhook_endpoints')
          .where('tenant', '=', tenant)
          .where('id', '=', id)
          .executeTakeFirst();
        if ((result.numDeletedRows ?? 0n) === 0n) return false;
        await trx.deleteFrom('webhook_deliveries').where('endpoint_id', '=', id).execute();
        await trx.deleteFrom('webhook_endpoint_events').where('endpoint_id', '=', id).execute();
        return true;
      });
    },

    async rotateSecret(tenant, id, secret, previousExpiresAt) {
      return db.transaction().execute(async (trx) => {
        const row = await trx
          .selectFrom('webhook_endpoints')
          .selectAll()
          .where('tenant', '=', tenant)
          .where('id', '=', id)
          .executeTakeFirst();
        if (!row) return undefined;
        const update = {
          secret: sealSecret(secret, secretKeys),
          previous_secret: row.secret,
          previous_secret_expires_at: previousExpiresAt,
          updated_at: now(),
        };
        await trx.updateTable('webhook_endpoints').set(update).where('id', '=', id).execute();
        return toEndpoint({ ...row, ...update });
      });
    },

    async endpointsFor(tenant, eventType) {
      const rows = await db
        .selectFrom('webhook_endpoints')
        .select(['id', 'event_types'])
        .where('tenant', '=', tenant)
        .orderBy('created_at')
        .execute();
      return rows
        .filter((row) => (JSON.parse(row.event_types) as string[]).includes(eventType))
        .map((row) => row.id);
    },

    async target(id, at) {
      const row = await db
        .selectFrom('webhook_endpoints')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row) return undefined;
      const previousValid =
        row.previous_secret !== null &&
        row.previous_secret_expires_at !== null &&
        row.previous_secret_expires_at > at;
      const stored = previousValid ? [row.secret, row.previous_secret as string] : [row.secret];
      const secrets = stored.map((secret) => openSecret(secret, secretKeys));
      const eventTypes = JSON.parse(row.event_types) as WebhookEventType[];
      return { tenant: row.tenant, url: row.url, eventTypes, secrets };
    },

    async recordEvent(event) {
      const at = now();
      const row: WebhookEventsTable = {
        id: event.id,
        tenant: event.tenant,
        sandbox_id: event.sandboxId,
        type: event.type,
        payload: event.payload,
        created_at: at,
      };
      const inserted = await db.transaction().execute((trx) => insertEvent(trx, feed.dialect, row));
      if (inserted) feed.onEvent(event.tenant);
    },

    async getEvent(id) {
      const row = await db
        .selectFrom('webhook_events')
        .selectAll()
        .where('id', '=', id)
        .executeTakeFirst();
      if (!row) return undefined;
      return {
        id: row.id,
        tenant: row.tenant,
        sandboxId: row.sandbox_id,
        type: row.type as WebhookEventType,
        payload: row.payload,
      };
    },

    async recordDelivery(input) {
      const row: WebhookDeliveriesTable = {
        id: input.id,
        endpoint_id: input.endpointId,
        event_id: input.eventId,
        event_type: input.eventType,
        sandbox_id: input.sandboxId,
        attempt: input.attempt,
        status: input.status,
        http_status: input.httpStatus,
        error: input.error,
        duration_ms: Math.round(input.durationMs),
        created_at: now(),
      };
      await db
        .insertInto('webhook_deliveries')
        .values(row)
        .onConflict((c) => c.doNothing())
        .execute();
    },

    async listDeliveries(tenant, endpointId, limit) {
      const rows = await db
        .selectFrom('webhook_deliveries')
        .innerJoin('webhook_endpoints', 'webhook_endpoints.id', 'webhook_deliveries.endpoint_id')
        .selectAll('webhook_deliveries')
        .where('webhook_endpoints.tenant', '=', tenant)
        .where('webhook_deliveries.endpoint_id', '=', endpointId)
        .orderBy('webhook_deliveries.created_at', 'desc')
        .orderBy('webhook_deliveries.attempt', 'desc')
        .limit(limit)
        .execute();
      return rows.map(toDelivery);
    },
  };
}

/**
 * Re-seals every stored webhook secret (current and previous) that is in clear or sealed under a
 * key other than the ring's first, so a rotated-out key can be dropped after one start with the
 * new ring. Each row is rewritten only if it still holds the value read (a concurrent rotation
 * wins). Bounded: at most MAX_WEBHOOK_ENDPOINTS_PER_TENANT rows per tenant.
 * @returns how many rows it rewrote
 * @throws SealedSecretError when a stored secret is sealed under a key the ring lacks
 */
export async function resealWebhookSecrets(
  db: Kysely<Database>,
  ring: SecretKeyRing,
): Promise<number> {
  const current = `whenc:v1:${ring.current.id}:`;
  const stale = (value: string | null) => value !== null && !value.startsWith(current);
  // Only the rows to rewrite leave the database (at a start with an unchanged ring, none);
  // a prefix compare, since a key id may hold LIKE's `_`.
  const prefix = (column: 'secret' | 'previous_secret') =>
    sql<string>`substr(${sql.ref(column)}, 1, ${current.length})`;
  const rows = await db
    .selectFrom('webhook_endpoints')
    .select(['id', 'secret', 'previous_secret'])
    .where((eb) =>
      eb.or([
        eb(prefix('secret'), '<>', current),
        eb.and([
          eb('previous_secret', 'is not', null),
          eb(prefix('previous_secret'), '<>', current),
        ]),
      ]),
    )
    .execute();
  let rewritten = 0;
  for (const row of rows.filter((r) => stale(r.secret) || stale(r.previous_secret))) {
    const reseal = (value: string | null) =>
      value === null ? null : stale(value) ? sealSecret(openSecret(value, ring), ring) : value;
    let update = db
      .updateTable('webhook_endpoints')
      .set({ secret: reseal(row.secret) as string, previous_secret: reseal(row.previous_secret) })
      .where('id', '=', row.id)
      .where('secret', '=', row.secret);
    update =
      row.previous_secret === null
        ? update.where('previous_secret', 'is', null)
        : update.where('previous_secret', '=', row.previous_secret);
    const result = await update.executeTakeFirst();
    rewritten += Number(result.numUpdatedRows ?? 0n);
  }
  return rewritten;
}

function toEndpoint(row: Selectable<WebhookEndpointsTable>): WebhookEndpointRecord {
  return {
    id: row.id,
    tenant: row.tenant,
    url: row.url,
    eventTypes: JSON.parse(row.event_types) as WebhookEventType[],
    createdAt: row.created_at,
    updatedAt: row.updated_at,
    previousSecretExpiresAt: row.previous_secret_expires_at,
  };
}

function toDelivery(row: Selectable<WebhookDeliveriesTable>): WebhookDeliveryRecord {
  return {
    id: row.id,
    endpointId: row.endpoint_id,
    eventId: row.event_id,
    eventType: row.event_type as WebhookEventType,
    sandboxId: row.sandbox_id,
    attempt: row.attempt,
    status: row.status as WebhookDeliveryStatus,
    httpStatus: row.http_status,
    error: row.error,
    durationMs: row.duration_ms,
    createdAt: row.created_at,
  };
}
