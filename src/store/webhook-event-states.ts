/**
 * Where each event stands for each endpoint that hears it (migration 0017, docs/webhooks.md,
 * "What is kept"), so an event refused at delivery or given up is kept and can be sent again by
 * a recover, and so no two deliveries send one event at once:
 *
 * | step                          | row                                                            |
 * | ----------------------------- | -------------------------------------------------------------- |
 * | emitted (`trackEvent`)        | `pending`, round 0                                             |
 * | a delivery takes it (`claim`) | `delivering`, holder = that delivery; only for the row's round |
 * | the attempt ends (`settle`)   | `succeeded` or `refused` (a failed attempt stays `delivering`) |
 * | a recover (`requeueEvents`)   | `refused`, given-up or `queued` ones: `queued`, round + 1      |
 *
 * A delivery signalled with an older round (a recover queued the event again meanwhile), or with
 * the round another delivery holds, finds nothing to take and sends nothing.
 */
import type { Kysely } from 'kysely';
import {
  WEBHOOK_GIVEN_UP_AFTER_MS,
  type WebhookEventRef,
  type WebhookEventState,
  type WebhookEventType,
} from '../../contract/index.js';
import type { Database, WebhookEndpointEventsTable } from './schema.js';

/** One event a recover queued again, with the round its delivery must hold. */
export interface RequeuedWebhookEvent {
  eventId: string;
  sandboxId: string;
  type: WebhookEventType;
  round: number;
  /** When it was emitted (ISO-8601 UTC). */
  emittedAt: string;
}

/** Where one event stands for one endpoint. */
export interface WebhookEventStateRecord {
  status: WebhookEventState;
  round: number;
  emittedAt: string;
  updatedAt: string;
}

/** Which delivery, of which round, of which event, to which endpoint. */
export interface WebhookEventClaim {
  endpointId: string;
  event: WebhookEventRef;
  /** The delivery's own id (`workflow id/run id/activity id`): the same at each of its attempts. */
  holder: string;
}

/** The event-state part of the webhook store. */
export interface WebhookEventStates {
  /**
   * Records that each endpoint hears the event (`pending`, round 0); a repeat (a retried emit)
   * changes nothing.
   */
  trackEvent(event: WebhookEventRef, endpointIds: readonly string[]): Promise<void>;
  /**
   * Takes the event's round `event.round` (0 when absent) for `holder`, or finds it already
   * taken by `holder` (its retry). An event without a row (emitted before migration 0017) gets
   * one first.
   * @returns whether `holder` may send it; false when the event was delivered, refused or given
   *   up in this round, another delivery holds it, or a recover queued it again since
   */
  claimEvent(claim: WebhookEventClaim): Promise<boolean>;
  /** Ends `holder`'s round of the event as `succeeded` or `refused`; nothing when it lost it. */
  settleEvent(claim: WebhookEventClaim, status: 'succeeded' | 'refused'): Promise<void>;
  /**
   * Queues again, in one statement, the endpoint's events emitted at or after `since` that were
   * refused, given up (`delivering` for over WEBHOOK_GIVEN_UP_AFTER_MS) or queued by an earlier
   * recover and not taken yet: each gets round + 1, which only the delivery the caller starts for
   * it will hold. Two recovers at once queue each event under one round only.
   * @param since ISO-8601 UTC
   * @returns the queued events, oldest first; [] for another tenant's endpoint
   */
  requeueEvents(tenant: string, endpointId: string, since: string): Promise<RequeuedWebhookEvent[]>;
  /** Where the event stands for the endpoint; undefined when unknown. */
  eventState(endpointId: string, eventId: string): Promise<WebhookEventStateRecord | undefined>;
}

/** Builds the event states over the store's database; `now` gives ISO-8601 UTC. */
export function webhookEventStates(db: Kysely<Database>, now: () => string): WebhookEventStates {
  const insertPending = async (event: WebhookEventRef, endpointIds: readonly string[]) => {
    if (endpointIds.length === 0) return;
    const at = now();
    const rows: WebhookEndpointEventsTable[] = endpointIds.map((endpointId) => ({
      endpoint_id: endpointId,
      event_id: event.id,
      sandbox_id: event.sandboxId,
      event_type: event.type,
      status: 'pending',
      round: 0,
      holder: null,
      emitted_at: at,
      updated_at: at,
    }));
    await db
      .insertInto('webhook_endpoint_events')
      .values(rows)
      .onConflict((c) => c.columns(['endpoint_id', 'event_id']).doNothing())
      .execute();
  };

  const take = async ({ endpointId, event, holder }: WebhookEventClaim): Promise<boolean> => {
    const at = now();
    const result = await db
      .updateTable('webhook_endpoint_events')
      .set((eb) => ({
        status: 'delivering',
        holder,
        // When the delivery first took it: the given-up clock starts there, not at each retry.
        updated_at: eb
          .case()
          .when('status', '=', 'delivering')
          .then(eb.ref('updated_at'))
          .else(at)
          .end(),
      }))
      .where('endpoint_id', '=', endpointId)
      .where('event_id', '=', event.id)
      .where('round', '=', event.round ?? 0)
      .where((eb) =>
        eb.or([
          eb('status', 'in', ['pending', 'queued']),
          eb.and([eb('status', '=', 'delivering'), eb('holder', '=', holder)]),
        ]),
      )
      .executeTakeFirst();
    return result.numUpdatedRows > 0n;
  };

  return {
    trackEvent: insertPending,

    async claimEvent(claim) {
      if ((claim.event.round ?? 0) === 0) {
        const known = await db
          .selectFrom('webhook_endpoint_events')
          .select('status')
          .where('endpoint_id', '=', claim.endpointId)
          .where('event_id', '=', claim.event.id)
          .executeTakeFirst();
        if (!known) await insertPending(claim.event, [claim.endpointId]);
      }
      return take(claim);
    },

    async settleEvent({ endpointId, event, holder }, status) {
      await db
        .updateTable('webhook_endpoint_events')
        .set({ status, updated_at: now() })
        .where('endpoint_id', '=', endpointId)
        .where('event_id', '=', event.id)
        .where('round', '=', event.round ?? 0)
        .where('holder', '=', holder)
        .execute();
    },

    async requeueEvents(tenant, endpointId, since) {
      const at = now();
      const givenUpBefore = new Date(Date.parse(at) - WEBHOOK_GIVEN_UP_AFTER_MS).toISOString();
      const rows = await db
        .updateTable('webhook_endpoint_events')
        .set((eb) => ({
          status: 'queued',
          round: eb('round', '+', 1),
          holder: null,
          updated_at: at,
        }))
        .where('endpoint_id', '=', endpointId)
        .where('endpoint_id', 'in', (eb) =>
          eb.selectFrom('webhook_endpoints').select('id').where('tenant', '=', tenant),
        )
        .where('emitted_at', '>=', since)
        .where((eb) =>
          eb.or([
            eb('status', 'in', ['refused', 'queued']),
            eb.and([eb('status', '=', 'delivering'), eb('updated_at', '<', givenUpBefore)]),
          ]),
        )
        .returning(['event_id', 'sandbox_id', 'event_type', 'round', 'emitted_at'])
        .execute();
      return rows
        .map((row) => ({
          eventId: row.event_id,
          sandboxId: row.sandbox_id,
          type: row.event_type as WebhookEventType,
          round: Number(row.round),
          emittedAt: row.emitted_at,
        }))
        .sort(
          (a, b) => a.emittedAt.localeCompare(b.emittedAt) || a.eventId.localeCompare(b.eventId),
        );
    },

    async eventState(endpointId, eventId) {
      const row = await db
        .selectFrom('webhook_endpoint_events')
        .selectAll()
        .where('endpoint_id', '=', endpointId)
        .where('event_id', '=', eventId)
        .executeTakeFirst();
      if (!row) return undefined;
      return {
        status: row.status as WebhookEventState,
        round: Number(row.round),
        emittedAt: row.emitted_at,
        updatedAt: row.updated_at,
      };
    },
  };
}
