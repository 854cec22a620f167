/**
 * Webhook endpoint routes (docs/webhooks.md): register, list, get the deliveries of, rotate the
 * secret of, recover the refused and given-up events of, and delete the calling tenant's
 * endpoints. The tenant is always the caller's (its token or JWT, src/api/auth.ts), never a field of
 * the body; another tenant's endpoint answers 404. The signing secret is in the answer of a
 * create and of a rotation only.
 */
import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { z } from 'zod';
import {
  MAX_WEBHOOK_URL_LENGTH,
  WEBHOOK_DELIVERY_LIST_LIMIT,
  WEBHOOK_DELIVERY_WORKFLOW,
  WEBHOOK_EVENT_RETENTION_MS,
  WEBHOOK_EVENT_SIGNAL,
  WEBHOOK_EVENT_TYPES,
  webhookRecoverWorkflowId,
  type WebhookDeliveryRecord,
  type WebhookEndpointRecord,
  type WebhookEventRef,
} from '../../../contract/index.js';
import { TooManyWebhookEndpointsError } from '../../store/index.js';
import {
  WEBHOOK_ENDPOINT_ID,
  newWebhookEndpointId,
  newWebhookSecret,
} from '../../webhooks/secrets.js';
import {
  vetWebhookTarget,
  WebhookAddressGuard,
  WebhookTargetRefusedError,
} from '../../webhooks/ssrf-guard.js';
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

/**
 * Why `raw` is not a usable endpoint URL (the rule it breaks), or null when it is one. Parses it
 * once: a string that is no URL at all never reaches a check that needs one.
 */
export function endpointUrlProblem(raw: string): string | null {
  if (!URL.canParse(raw)) {
    return 'must be an absolute http or https URL, e.g. https://hooks.example.com/sandboxes';
  }
  const url = new URL(raw);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must use http or https';
  if (url.hostname === '') return 'must name a host';
  if (url.username || url.password) return 'must not carry credentials (user:password@)';
  if (url.hash) return 'must not have a #fragment';
  return null;
}

const endpointUrl = z
  .string({ error: 'is required, an http or https URL' })
  .max(MAX_WEBHOOK_URL_LENGTH, { error: `must be at most ${MAX_WEBHOOK_URL_LENGTH} characters` })
  .check((ctx) => {
    const problem = endpointUrlProblem(ctx.value);
    if (problem !== null) ctx.issues.push({ code: 'custom', message: problem, input: ctx.value });
  });

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

/**
 * How long registration waits for the URL's host to resolve, in ms. A name that does not resolve
 * within it (or at all) is accepted: DNS may answer later, and each delivery attempt checks again.
 */
export const REGISTRATION_LOOKUP_MS = 2_000;

/**
 * Checks, at registration, the rule delivery applies at each attempt (src/webhooks/ssrf-guard.ts
 * `vetWebhookTarget`, with the same WEBHOOK_ALLOWED_CIDRS): a URL whose host is, or resolves to,
 * an address delivery may not reach is refused now rather than every event being refused later.
 * @returns the reason a name could not be checked (it is accepted), or null when it was
 * @throws ApiError `invalid_request` naming the address, its range and WEBHOOK_ALLOWED_CIDRS
 */
async function checkReachable(
  url: string,
  guard: WebhookAddressGuard,
  lookup: AppDeps['webhookLookup'],
): Promise<string | null> {
  try {
    await vetWebhookTarget(
      new URL(url),
      guard,
      AbortSignal.timeout(REGISTRATION_LOOKUP_MS),
      lookup,
    );
    return null;
  } catch (err) {
    if (err instanceof WebhookTargetRefusedError && err.refused) {
      const { address, reason } = err.refused;
      throw new ApiError(
        'invalid_request',
        `url ${err.message} (an operator may add e.g. ${address}/${address.includes(':') ? 128 : 32} to it)`,
        { field: 'url', address, address_class: reason, setting: 'WEBHOOK_ALLOWED_CIDRS' },
      );
    }
    if (err instanceof WebhookTargetRefusedError) {
      throw new ApiError('invalid_request', `url ${err.message}`, { field: 'url' });
    }
    return err instanceof Error ? err.message : String(err);
  }
}

const recoverBody = z.strictObject({
  since: z.iso.datetime({
    offset: true,
    error: 'is required, an RFC 3339 time such as 2026-12-06T10:00:00Z',
  }),
});

/**
 * The validated `since` of `POST /v1/webhook-endpoints/{id}:recover`, as ISO-8601 UTC.
 * @param nowMs the current time, epoch ms
 * @throws ApiError `invalid_request` naming the field: not RFC 3339, in the future, or older
 *   than the events are kept (WEBHOOK_EVENT_RETENTION_MS, 7 days)
 */
export function parseRecoverSince(body: unknown, nowMs: number): string {
  const parsed = recoverBody.safeParse(body ?? {});
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const message =
      issue?.code === 'unrecognized_keys'
        ? `unknown field ${issue.keys.join(', ')}`
        : `since ${issue?.message ?? 'is invalid'}`;
    throw new ApiError('invalid_request', message, { field: issue?.path.join('.') || 'since' });
  }
  const sinceMs = Date.parse(parsed.data.since);
  if (sinceMs > nowMs) {
    throw new ApiError('invalid_request', 'since must not be in the future', { field: 'since' });
  }
  if (sinceMs < nowMs - WEBHOOK_EVENT_RETENTION_MS) {
    throw new ApiError(
      'invalid_request',
      `since must be within the last ${WEBHOOK_EVENT_RETENTION_MS / 86_400_000} days: events are kept that long`,
      { field: 'since', oldest: new Date(nowMs - WEBHOOK_EVENT_RETENTION_MS).toISOString() },
    );
  }
  return new Date(sinceMs).toISOString();
}

function notFound(id: string): ApiError {
  return new ApiError('not_found', `webhook endpoint ${id} does not exist`, { endpoint_id: id });
}

/** Handlers of the webhook endpoint routes. */
export function webhookHandlers(deps: AppDeps) {
  const webhooks = deps.store.webhooks;
  // The worker's rule, from the same configuration (WEBHOOK_ALLOWED_CIDRS).
  const guard = new WebhookAddressGuard(deps.config.webhooks.allowedCidrs);
  const idOf = (raw: unknown): string => {
    const id = String(raw);
    if (!WEBHOOK_ENDPOINT_ID.test(id)) throw notFound(id);
    return id;
  };

  /**
   * `POST /v1/webhook-endpoints`: 201 + the endpoint and its `secret` (shown this once); 400 for
   * a URL delivery may not reach (checkReachable).
   */
  const createWebhookEndpoint: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const body = parseCreateWebhookEndpoint(req.body);
    const unchecked = await checkReachable(body.url, guard, deps.webhookLookup);
    if (unchecked !== null) {
      deps.logger.info(
        { url_host: new URL(body.url).hostname, error: unchecked },
        'webhook endpoint host did not resolve at registration; delivery checks it at each attempt',
      );
    }
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

  /**
   * `POST /v1/webhook-endpoints/{id}:recover` with `{since}`: queues again the endpoint's events
   * emitted since then that were refused, given up, or queued and not taken yet
   * (src/store/webhook-event-states.ts), each under a new round that only the delivery started here
   * holds, and signals-with-start one delivery workflow per sandbox of this recover, in the order
   * the events were emitted. Each attempt then checks and signs as any delivery does. 202 with
   * how many were queued.
   * @throws ApiError `unavailable` when Temporal cannot be reached: the events stay queued, and
   *   a repeated recover queues them again (superseding this one's rounds)
   */
  const recoverWebhookEvents: RequestHandler = async (req, res) => {
    const tenant = tenantOf(res);
    const id = idOf(req.params.id);
    const since = parseRecoverSince(req.body, Date.now());
    if (!(await webhooks.getEndpoint(tenant, id))) throw notFound(id);
    const queued = await webhooks.requeueEvents(tenant, id, since);
    const recoverId = randomUUID();
    try {
      for (const event of queued) {
        const ref: WebhookEventRef = {
          id: event.eventId,
          type: event.type,
          sandboxId: event.sandboxId,
          round: event.round,
        };
        await deps.temporal.workflow.signalWithStart(WEBHOOK_DELIVERY_WORKFLOW, {
          workflowId: webhookRecoverWorkflowId(id, event.sandboxId, recoverId),
          taskQueue: deps.config.taskQueue,
          args: [{ endpointId: id, sandboxId: event.sandboxId }],
          signal: WEBHOOK_EVENT_SIGNAL,
          signalArgs: [ref],
        });
      }
    } catch (err) {
      deps.logger.warn(
        { endpoint_id: id, queued: queued.length, error: (err as Error).message },
        'webhook recover could not start its deliveries',
      );
      throw new ApiError(
        'unavailable',
        `queued ${queued.length} events of ${id} but could not start their delivery (Temporal could not be reached); they stay queued: repeat the recover`,
        { endpoint_id: id, queued: queued.length },
      );
    }
    deps.logger.info({ endpoint_id: id, since, queued: queued.length }, 'webhook events recovered');
    res.status(202).json({ endpoint_id: id, since, queued: queued.length });
  };

  return {
    createWebhookEndpoint,
    recoverWebhookEvents,
    listWebhookEndpoints,
    getWebhookEndpoint,
    deleteWebhookEndpoint,
    rotateWebhookSecret,
    listWebhookDeliveries,
  };
}
