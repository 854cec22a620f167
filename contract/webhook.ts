/**
 * Webhooks as every layer names them (docs/webhooks.md): the event types a tenant subscribes to,
 * the event a delivery carries, and the bounds of an endpoint. Types, constants and pure
 * functions only (no Node imports), so the workflow bundle may import it.
 */

/**
 * Event types, one per sandbox transition a tenant may want to hear about: the sandbox became
 * `running`, `failed` (a create's failure or cancellation), `lost` (its pod vanished while it
 * ran), or `deleted`.
 */
export const WEBHOOK_EVENT_TYPES = [
  'sandbox.running',
  'sandbox.failed',
  'sandbox.lost',
  'sandbox.deleted',
] as const;
/** A webhook event type. */
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** The sandbox state each event type announces. */
export const EVENT_TYPE_OF_STATE: Readonly<Record<string, WebhookEventType>> = {
  running: 'sandbox.running',
  failed: 'sandbox.failed',
  lost: 'sandbox.lost',
  deleted: 'sandbox.deleted',
};

/**
 * Why a sandbox was deleted, as its `sandbox.deleted` event says (`data.delete_cause`):
 * `requested` by a caller (`DELETE /v1/sandboxes/{id}`), `expired` at its `expire_time`, or
 * `lost` when its pod was already gone (the sandbox was `lost`) when it was deleted.
 */
export const SANDBOX_DELETION_CAUSES = ['requested', 'expired', 'lost'] as const;
/** A `sandbox.deleted` event's cause. */
export type SandboxDeletionCause = (typeof SANDBOX_DELETION_CAUSES)[number];

/** Endpoints one tenant may register. */
export const MAX_WEBHOOK_ENDPOINTS_PER_TENANT = 20;
/** Longest accepted endpoint URL, in characters. */
export const MAX_WEBHOOK_URL_LENGTH = 2048;
/** Deliveries `GET /v1/webhook-endpoints/{id}/deliveries` returns at most (newest first). */
export const WEBHOOK_DELIVERY_LIST_LIMIT = 100;

/**
 * One event, as the delivery workflow carries it and the receiver gets it (the body is
 * `{type, timestamp, data}`, the Standard Webhooks payload shape). `id` is stable: every
 * attempt, every endpoint and every re-emission of the same transition carry the same id, sent
 * as the `webhook-id` header for the receiver to de-duplicate.
 */
export interface WebhookEvent {
  /** `evt_…`, derived from the sandbox, its generation and the type. */
  id: string;
  type: WebhookEventType;
  /** ISO-8601 UTC: when the transition was written (the sandbox's `updated_at`). */
  timestamp: string;
  sandboxId: string;
  /** The sandbox as `GET /v1/sandboxes/{id}` shows it, at the transition (snake_case JSON). */
  data: Record<string, unknown>;
}

/**
 * What the delivery workflow carries of an event: its id, type and sandbox, never its body. The
 * delivery reads the body from the store by id (docs/security.md, "What the worker trusts"), so
 * a workflow started by anyone but the worker can at most re-send a real event to an endpoint of
 * the event's own tenant.
 */
export type WebhookEventRef = Pick<WebhookEvent, 'id' | 'type' | 'sandboxId'> & {
  /**
   * Which sending of the event this is, for its endpoint: absent (0) for the first, the round a
   * recover gave it (`POST /v1/webhook-endpoints/{id}:recover`) for a later one. Only the
   * delivery holding the endpoint's current round of the event sends it
   * (src/store/webhooks.ts `claimEvent`), so no two deliveries send one event at once.
   */
  round?: number;
};

/**
 * How long the store keeps an emitted event, in ms: 7 days, beyond the 3 days a delivery is
 * retried (src/workflows/webhook-delivery.ts).
 */
export const WEBHOOK_EVENT_RETENTION_MS = 7 * 86_400_000;

/**
 * How long one event's delivery is retried, in ms (3 days: the activity's schedule-to-close,
 * src/workflows/webhook-delivery.ts).
 */
export const WEBHOOK_DELIVERY_WINDOW_MS = 3 * 86_400_000;

/**
 * An event still `delivering` this long after its delivery took it, in ms, is given up: its
 * delivery window has closed (the window, plus 10 minutes for an attempt that was running then).
 */
export const WEBHOOK_GIVEN_UP_AFTER_MS = WEBHOOK_DELIVERY_WINDOW_MS + 10 * 60_000;

/**
 * Where one event stands for one endpoint (src/store/webhooks.ts, migration 0017): `pending`
 * (emitted, waiting for its delivery), `queued` (queued again by a recover), `delivering` (a
 * delivery took it: an attempt runs or a retry is scheduled), `succeeded`, `refused` (its target
 * resolved to an address delivery may not reach; kept for a recover). An event `delivering` for
 * longer than {@link WEBHOOK_GIVEN_UP_AFTER_MS} is given up.
 */
export type WebhookEventState = 'pending' | 'queued' | 'delivering' | 'succeeded' | 'refused';

/** Outcome of one delivery attempt. */
export type WebhookDeliveryStatus = 'succeeded' | 'failed' | 'refused';

/** One delivery attempt as the store keeps it and the tenant lists it. */
export interface WebhookDeliveryRecord {
  id: string;
  endpointId: string;
  eventId: string;
  eventType: WebhookEventType;
  sandboxId: string;
  /** 1 for the first attempt. */
  attempt: number;
  status: WebhookDeliveryStatus;
  /** The receiver's HTTP status; null when no response came. */
  httpStatus: number | null;
  /** Why it failed or was refused; null on success. */
  error: string | null;
  /** How long the attempt took, in ms. */
  durationMs: number;
  /** ISO-8601 UTC. */
  createdAt: string;
}

/** A registered endpoint, without its secrets. */
export interface WebhookEndpointRecord {
  /** `whe_…` */
  id: string;
  tenant: string;
  url: string;
  eventTypes: WebhookEventType[];
  createdAt: string;
  updatedAt: string;
  /** When the previous secret stops signing (ISO-8601), after a rotation; else null. */
  previousSecretExpiresAt: string | null;
}

/** Workflow id of the delivery workflow of one endpoint and one sandbox (order per sandbox). */
export function webhookDeliveryWorkflowId(endpointId: string, sandboxId: string): string {
  return `webhook-delivery:${endpointId}:${sandboxId}`;
}

/**
 * Workflow id of the delivery of one recover's events of one endpoint and one sandbox
 * (`recoverId` is the recover's own, so it never meets a delivery that already took the id).
 */
export function webhookRecoverWorkflowId(
  endpointId: string,
  sandboxId: string,
  recoverId: string,
): string {
  return `webhook-recover:${endpointId}:${sandboxId}:${recoverId}`;
}

/** The name the delivery workflow is registered under (src/workflows/index.ts). */
export const WEBHOOK_DELIVERY_WORKFLOW = 'webhookDelivery';

/** ApplicationFailure type of a delivery to a target that may not be reached (non-retryable). */
export const WEBHOOK_TARGET_REFUSED = 'WebhookTargetRefused';

/** Name of the delivery workflow's signal that hands it an event. */
export const WEBHOOK_EVENT_SIGNAL = 'webhookEvent';
