/**
 * Webhook endpoint routes (docs/webhooks.md): register, list, get the deliveries of, rotate the
 * secret of, and delete the calling tenant's endpoints. The tenant is always the caller's (its
 * token or JWT, api/auth.ts), never a field of the body; another tenant's endpoint answers 404.
 * The signing secret is in the answer of a create and of a rotation only.
 */
import type { RequestHandler } from 'express';
import { z } from 'zod';
import {
  MAX_WEBHOOK_URL_LENGTH,
  WEBHOOK_DELIVERY_LIST_LIMIT,
  WEBHOOK_EVENT_TYPES,
  type WebhookDeliveryRecord,
  type WebhookEndpointRecord,
} from '../../contract/index.js';
import { TooManyWebhookEndpointsError } from '../../store/index.js';
import {
  WEBHOOK_ENDPOINT_ID,
  newWebhookEndpointId,
  newWebhookSecret,
} from '../../webhooks/secrets.js';
import { tenantOf } from '../auth.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';

/** A webhook endpoint as the API shows it (never its secret). */
export interface WebhookEndpointJson {
  id: string;
  url: string;
  event_types: string[];
  created_at: string;
  updated_at: string;
  previous_secret_expires_at: string | null;
}

/** One delivery attempt as the API shows it. */
export interface WebhookDeliveryJson {
  id: string;
  event_id: string;
  event_type: string;
  sandbox_id: string;
  attempt: number;
  status: string;
  http_status: number | null;
  error: string | null;
  duration_ms: number;
  created_at: string;
}

/** An endpoint in the API's spelling. */
export function webhookEndpointToWire(record: WebhookEndpointRecord): WebhookEndpointJson {
  return {
    id: record.id,
    url: record.url,
    event_types: [...record.eventTypes],
    created_at: record.createdAt,
    updated_at: record.updatedAt,
    previous_secret_expires_at: record.previousSecretExpiresAt,
  };
}

/** A delivery attempt in the API's spelling. */
export function webhookDeliveryToWire(record: WebhookDeliveryRecord): WebhookDeliveryJson {
  return {
    id: record.id,
    event_id: record.eventId,
    event_type: record.eventType,
    sandbox_id: record.sandboxId,
    attempt: record.attempt,
    status: record.status,
    http_status: record.httpStatus,
    error: record.error,
    duration_ms: record.durationMs,
    created_at: record.createdAt,
  };
}

const endpointUrl = z
  .string({ error: 'is required, an http or https URL' })
  .max(MAX_WEBHOOK_URL_LENGTH, { error: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` })
  .refine((raw) => URL.canParse(raw), { error: 'must be an absolute http or https URL' })
  .refine((raw) => ['http:', 'https:'].includes(new URL(raw).protocol), {
    error: 'must use http or https',
  })
  .refine((raw) => !new URL(raw).username && !new URL(raw).password, {
    error: 'must not carry credentials (user:password@)',
  })
  .refine((raw) => !new URL(raw).hash, { error: 'must not have a #fragment' });

const createBody = z.strictObject({
  url: endpointUrl,
  event_types: z
    .array(
      z.enum(WEBHOOK_EVENT_TYPES, {
        error: `must each be one of ${WEBHOOK_EVENT_TYPES.join(', ')}`,
      }),
      {
        error: 'is required, a list of event types',
      },
    )
    .min(1, { error: 'must name at least one event type' })
    .refine((types) => new Set(types).size === types.length, { error: 'must not repeat a type' }),
});

/**
 * The validated body of `POST /v1/webhook-endpoints`.
 * @throws ApiError `invalid_request` naming the field
 */
export function parseCreateWebhookEndpoint(body: unknown): z.infer<typeof createBody> {
  const parsed = createBody.safeParse(body ?? {});
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue?.path.join('.') ?? '';
  const message =
    issue?.code === 'unrecognized_keys'
      ? `unknown field ${issue.keys.join(', ')}`
      : `${field} ${issue?.message ?? 'is invalid'}`;
  throw new ApiError('invalid_request', message.trim(), field ? { field } : {});
}

function notFound(id: string): ApiError {
  return new ApiError('not_found', `webhook endpoint ${id} does not exist`, { endpoint_id: id });
}

/** Handlers of the webhook endpoint routes. */
export function webhookHandlers(deps: AppDeps) {
  const webhooks = deps.store.webhooks;
  const idOf = (raw: unknown): string => {
    const id = String(raw);
    if (!WEBHOOK_ENDPOINT_ID.test(id)) throw notFound(id);
    return id;
  };

  /** `POST /v1/webhook-endpoints`: 201 + the endpoint and its `secret` (shown this once). */
  const createWebhookEndpoint: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const body = parseCreateWebhookEndpoint(req.body);
    const secret = newWebhookSecret();
    try {
      const endpoint = await webhooks.createEndpoint({
        id: newWebhookEndpointId(),
        tenant,
        url: body.url,
        eventTypes: body.event_types,
        secret,
      });
      res.status(201).location(`/v1/webhook-endpoints/${endpoint.id}`);
      res.json({ ...webhookEndpointToWire(endpoint), secret });
    } catch (err) {
      if (err instanceof TooManyWebhookEndpointsError) {
        throw new ApiError('quota_exceeded', err.message, {
          limit: 'webhook_endpoints',
          max: err.limit,
        });
      }
      throw err;
    }
  };

  /** `GET /v1/webhook-endpoints`: the tenant's endpoints, oldest first. */
  const listWebhookEndpoints: RequestHandler = async (_req, res) => {
    const endpoints = await webhooks.listEndpoints(tenantOf(res));
    res.json({ webhook_endpoints: endpoints.map(webhookEndpointToWire) });
  };

  /** `GET /v1/webhook-endpoints/{id}`: the endpoint; 404 when unknown or another tenant's. */
  const getWebhookEndpoint: RequestHandler = async (req, res) => {
    const id = idOf(req.params.id);
    const endpoint = await webhooks.getEndpoint(tenantOf(res), id);
    if (!endpoint) throw notFound(id);
    res.json(webhookEndpointToWire(endpoint));
  };

  /** `DELETE /v1/webhook-endpoints/{id}`: 204; its pending deliveries stop. */
  const deleteWebhookEndpoint: RequestHandler = async (req, res) => {
    const id = idOf(req.params.id);
    if (!(await webhooks.deleteEndpoint(tenantOf(res), id))) throw notFound(id);
    res.status(204).end();
  };

  /**
   * `POST /v1/webhook-endpoints/{id}/rotate-secret`: a new secret (in the answer, once); the
   * old one keeps signing beside it for WEBHOOK_SECRET_GRACE_MS.
   */
  const rotateWebhookSecret: RequestHandler = async (req, res) => {
    const id = idOf(req.params.id);
    const secret = newWebhookSecret();
    const graceEnds = new Date(Date.now() + deps.config.webhooks.secretGraceMs).toISOString();
    const endpoint = await webhooks.rotateSecret(tenantOf(res), id, secret, graceEnds);
    if (!endpoint) throw notFound(id);
    res.json({ ...webhookEndpointToWire(endpoint), secret });
  };

  /** `GET /v1/webhook-endpoints/{id}/deliveries`: the latest attempts, newest first. */
  const listWebhookDeliveries: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const id = idOf(req.params.id);
    if (!(await webhooks.getEndpoint(tenant, id))) throw notFound(id);
    const deliveries = await webhooks.listDeliveries(tenant, id, WEBHOOK_DELIVERY_LIST_LIMIT);
    res.json({ deliveries: deliveries.map(webhookDeliveryToWire) });
  };

  return {
    createWebhookEndpoint,
    listWebhookEndpoints,
    getWebhookEndpoint,
    deleteWebhookEndpoint,
    rotateWebhookSecret,
    listWebhookDeliveries,
  };
}
