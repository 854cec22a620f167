/**
 * Names for the API's JSON shapes, taken from the generated OpenAPI types (./schema.ts), so a
 * change of the document changes them.
 */
import type { components } from './schema.js';

type Schemas = components['schemas'];

/** The body of a create (`POST /v1/sandboxes`, `POST /sync/v1/sandboxes`). */
export type CreateSandboxRequest = Schemas['CreateSandboxRequest'];
/** A sandbox as the API answers it. */
export type Sandbox = Schemas['Sandbox'];
/** The body of `POST /v1/sandboxes/{id}:extend`: `ttl` or `expire_time`. */
export type ExtendSandboxRequest = Schemas['ExtendSandboxRequest'];
/** A sandbox's state: `creating`, `running`, `failed`, `deleted`, `lost`. */
export type SandboxState = Schemas['SandboxState'];
/** An operation (a create or a delete); docs/api.md, "Operations". */
export type Operation = Schemas['Operation'];
/** An operation's type: `sandbox.create`, `sandbox.delete`. */
export type OperationType = Operation['type'];
/** A sandbox's labels (docs/api.md, "Labels and filters"). */
export type Labels = Schemas['Labels'];
/** The body of `PATCH /v1/sandboxes/{id}`. */
export type UpdateSandboxRequest = Schemas['UpdateSandboxRequest'];
/** An operation's status: `running`, `succeeded`, `failed`, `cancelled`. */
export type OperationStatus = Schemas['OperationStatus'];
/** A template of the catalog, with its rootfs floor. */
export type Template = Schemas['Template'];
/** The tenant's limits and usage (`GET /v1/quota`; docs/api.md, "Tenant limits"). */
export type Quota = Schemas['Quota'];
/** A page of `GET /v1/sandboxes`. */
export type SandboxPage = Schemas['SandboxPage'];
/** A page of `GET /v1/operations`. */
export type OperationPage = Schemas['OperationPage'];
/** The body of `POST /v1/webhook-endpoints`. */
export type CreateWebhookEndpointRequest = Schemas['CreateWebhookEndpointRequest'];
/** A webhook endpoint (docs/webhooks.md), without its secret. */
export type WebhookEndpoint = Schemas['WebhookEndpoint'];
/** A webhook endpoint with its signing secret: the answer of a create or a rotation, only. */
export type WebhookEndpointWithSecret = Schemas['WebhookEndpointWithSecret'];
/** One delivery attempt of a webhook endpoint. */
export type WebhookDelivery = Schemas['WebhookDelivery'];
/** The body of `POST /v1/webhook-endpoints/{id}:recover`: `{ since }`, RFC 3339. */
export type RecoverWebhookEventsRequest = Schemas['RecoverWebhookEventsRequest'];
/** The answer of a recover: how many events were queued again. */
export type WebhookRecovery = Schemas['WebhookRecovery'];
/** A webhook event type: `sandbox.running`, `sandbox.failed`, `sandbox.lost`, `sandbox.deleted`. */
export type WebhookEventType = Schemas['WebhookEventType'];
/** One event of the feed: the webhook's id and body (`GET /v1/events`). */
export type Event = Schemas['Event'];
/** A page of the event feed, with the cursor to read on from. */
export type EventPage = Schemas['EventPage'];
/** Why a sandbox was deleted (`data.delete_cause` of a `sandbox.deleted` event). */
export type SandboxDeletionCause = Schemas['SandboxDeletionCause'];
/** The error body every failing request answers with. */
export type ErrorBody = Schemas['Error'];
/**
 * Every code an error answer can carry (the document's `Error.error.code`: the API's own codes
 * and the operation error codes of contract/operation.ts).
 */
export type ErrorCode = ErrorBody['error']['code'];
