/**
 * Webhook activities (docs/webhooks.md): `emitSandboxEvent` hands a sandbox's transition to the
 * delivery workflow of each subscribed endpoint (src/workflows/webhook-delivery.ts), and
 * `deliverWebhook` makes one signed, SSRF-checked POST, retried by Temporal with back-off.
 */
import { ApplicationFailure, Context, log } from '@temporalio/activity';
import {
  EVENT_TYPE_OF_STATE,
  WEBHOOK_EVENT_SIGNAL,
  webhookDeliveryWorkflowId,
  type SandboxState,
  type SandboxDeletionCause,
  type WebhookDeliveryStatus,
  type WebhookEventRef,
  NOT_ADMITTED_FAILURE_TYPE,
  WEBHOOK_DELIVERY_WORKFLOW,
  WEBHOOK_TARGET_REFUSED,
} from '../../contract/index.js';
import {
  sandboxEventBody,
  webhookEventId,
  type SandboxRecord,
  type Store,
} from '../store/index.js';
import type { Client } from '@temporalio/client';
import { tenantPriority } from '../temporal/priority.js';
import type { TenantLimitsConfig } from '../config/index.js';
import { postWebhook, WebhookTargetRefusedError } from '../webhooks/http-delivery.js';
import { newWebhookDeliveryId } from '../webhooks/secrets.js';
import { signWebhook } from '../webhooks/signing.js';
import { WebhookAddressGuard } from '../webhooks/ssrf-guard.js';
import { countWebhookDelivery } from './webhook-metrics.js';

/** How webhooks are delivered (WEBHOOK_* variables, docs/configuration.md). */
export interface WebhookDeliveryOptions {
  /** CIDRs a webhook may reach although they are private (WEBHOOK_ALLOWED_CIDRS). */
  allowedCidrs: readonly string[];
  /** One attempt, DNS to last byte, in ms (WEBHOOK_TIMEOUT_MS). */
  timeoutMs: number;
  /** Response bytes read at most (WEBHOOK_MAX_RESPONSE_BYTES). */
  maxResponseBytes: number;
}

/** Defaults: no private targets, 10 s per attempt, 64 KiB of response. */
export const DEFAULT_WEBHOOK_DELIVERY: WebhookDeliveryOptions = {
  allowedCidrs: [],
  timeoutMs: 10_000,
  maxResponseBytes: 64 * 1024,
};

/** Dependencies of the webhook activities. */
export interface WebhookActivityDeps {
  store: Store;
  webhooks?: WebhookDeliveryOptions;
}

export { webhookEventId };

/**
 * Emits the event of `sandbox` (as the calling step read it after its transition; undefined
 * when it is gone) when its state is one of `states` (the ones the
 * calling step writes; of them only `running`, `failed` and `deleted` have events; `lost` is
 * kept by the store as it marks the sandbox): keeps its body in the store, where the event feed
 * serves it (`GET /v1/events`, docs/webhooks.md, "The event feed"), then {@link announceEvent}s it to the tenant's
 * subscribed endpoints. Called after each store transition, also when a retried step finds it
 * already written (the event id is stable, so the store and the workflow drop the repeat).
 * Each signal carries the tenant's fairness key and the weight `tenantLimits` gives it.
 * @param deleteCause a `sandbox.deleted` event's `data.delete_cause` (default `requested`)
 * @returns how many endpoints it signalled
 * @throws the store's or Temporal's error (the calling step is retried)
 */
export async function emitSandboxEvent(
  store: Store,
  sandbox: SandboxRecord | undefined,
  states: readonly SandboxState[],
  tenantLimits?: TenantLimitsConfig,
  deleteCause?: SandboxDeletionCause,
): Promise<number> {
  if (!sandbox || !states.includes(sandbox.state)) return 0;
  const sandboxId = sandbox.id;
  const type = EVENT_TYPE_OF_STATE[sandbox.state];
  if (!type) return 0;
  const id = webhookEventId(sandbox, type);
  // The body is kept in the store (for the feed, and for deliveries, which read it by id).
  const payload = JSON.stringify(sandboxEventBody(sandbox, type, deleteCause));
  await store.webhooks.recordEvent({ id, tenant: sandbox.tenant, sandboxId, type, payload });
  const context = Context.current();
  const endpoints = await announceEvent(
    { client: context.client, taskQueue: context.info.taskQueue, store, tenantLimits },
    { id, type, sandboxId },
    sandbox.tenant,
  );
  log.info('webhook event emitted', { event_id: id, type, endpoints });
  return endpoints;
}

/** What {@link announceEvent} signals with. */
export interface EventAnnouncer {
  client: Pick<Client, 'workflow'>;
  /** The worker's task queue, where delivery workflows run. */
  taskQueue: string;
  store: Store;
  /** TENANT_LIMITS: the fairness weight of the delivery workflows (src/temporal/priority.ts); unset: 1. */
  tenantLimits?: TenantLimitsConfig;
}

/**
 * Hands a kept event to the delivery workflow of each endpoint of `tenant` subscribed to its
 * type (signal-with-start of `webhook-delivery:<endpoint>:<sandbox>`), after tracking it as
 * `pending` for each. Safe to repeat: the delivery drops an id it already took.
 * @returns how many endpoints it signalled
 * @throws the store's or Temporal's error
 */
export async function announceEvent(
  announcer: EventAnnouncer,
  ref: WebhookEventRef,
  tenant: string,
): Promise<number> {
  const { store, client, taskQueue } = announcer;
  const endpoints = await store.webhooks.endpointsFor(tenant, ref.type);
  if (endpoints.length === 0) return 0;
  // Each endpoint's state of the event (`pending`), before any delivery can take it.
  await store.webhooks.trackEvent(ref, endpoints);
  for (const endpointId of endpoints) {
    await client.workflow.signalWithStart(WEBHOOK_DELIVERY_WORKFLOW, {
      workflowId: webhookDeliveryWorkflowId(endpointId, ref.sandboxId),
      taskQueue,
      args: [{ endpointId, sandboxId: ref.sandboxId }],
      signal: WEBHOOK_EVENT_SIGNAL,
      signalArgs: [ref],
      // The tenant's fairness key and weight (src/temporal/priority.ts).
      priority: tenantPriority(announcer.tenantLimits, tenant),
    });
  }
  return endpoints.length;
}

/**
 * Announces the `sandbox.lost` event the store kept when it marked `sandbox` lost
 * (src/store/lost-sandboxes.ts `markSandboxLost`) to the tenant's subscribed endpoints.
 * @returns how many endpoints it signalled
 * @throws the store's or Temporal's error
 */
export function announceLostEvent(
  announcer: EventAnnouncer,
  sandbox: Pick<SandboxRecord, 'id' | 'generation' | 'tenant'>,
): Promise<number> {
  const type = 'sandbox.lost';
  const ref = { id: webhookEventId(sandbox, type), type, sandboxId: sandbox.id } as const;
  return announceEvent(announcer, ref, sandbox.tenant);
}

/** Builds the webhook activities over their dependencies. */
export function webhookActivities(deps: WebhookActivityDeps) {
  const options = deps.webhooks ?? DEFAULT_WEBHOOK_DELIVERY;
  const guard = new WebhookAddressGuard(options.allowedCidrs);

  return {
    /**
     * Delivers one event to one endpoint: reads the event's body from the store (never from
     * the input), takes the event's round for this delivery (src/store/webhook-event-states.ts
     * `claimEvent`: no other delivery sends it meanwhile), signs it with the endpoint's secrets
     * as they are now (a rotation's previous secret too, during its grace period), posts it, and
     * records the attempt. A 2xx answer is success. A refused target leaves the event `refused`,
     * kept for a recover.
     * @returns `delivered`; `endpoint_gone` when the endpoint was deleted meanwhile;
     *   `event_gone` when the store no longer holds the event, or this delivery may not send it
     *   (already sent in its round, held by another delivery, or queued again by a recover)
     * @throws ApplicationFailure `NotAdmitted` (non-retryable) when the event is not the
     *   endpoint's tenant's or not a type it subscribed to (a workflow the worker did not
     *   start); {@link WEBHOOK_TARGET_REFUSED} (non-retryable) for a refused target; a
     *   retryable one for any other failure (non-2xx, timeout, network)
     */
    async deliverWebhook(input: {
      endpointId: string;
      event: WebhookEventRef;
    }): Promise<'delivered' | 'endpoint_gone' | 'event_gone'> {
      const { endpointId } = input;
      const startedAt = new Date();
      const target = await deps.store.webhooks.target(endpointId, startedAt.toISOString());
      if (!target) return 'endpoint_gone';
      const event = await deps.store.webhooks.getEvent(input.event.id);
      if (!event) {
        log.warn('webhook event not in the store; not delivered', { event_id: input.event.id });
        return 'event_gone';
      }
      if (event.tenant !== target.tenant || !target.eventTypes.includes(event.type)) {
        log.warn('webhook delivery not admitted', { endpoint_id: endpointId, event_id: event.id });
        throw ApplicationFailure.create({
          type: NOT_ADMITTED_FAILURE_TYPE,
          message: `refused to deliver ${event.id} to ${endpointId}: the endpoint is not subscribed to it; the worker delivers only the events it emitted for the endpoint's tenant`,
          nonRetryable: true,
        });
      }
      const info = Context.current().info;
      const execution = info.workflowExecution;
      const claim = {
        endpointId,
        // The stored event's own type and sandbox, with the round the signal carried.
        event: {
          id: event.id,
          type: event.type,
          sandboxId: event.sandboxId,
          round: input.event.round,
        },
        holder: `${execution?.workflowId}/${execution?.runId}/${info.activityId}`,
      };
      if (!(await deps.store.webhooks.claimEvent(claim))) {
        log.info('webhook event not this delivery to send; skipped', {
          endpoint_id: endpointId,
          event_id: event.id,
          round: input.event.round ?? 0,
        });
        return 'event_gone';
      }
      const body = event.payload;
      const headers = signWebhook(event.id, startedAt, body, target.secrets);
      const attempt = info.attempt;
      const record = (
        status: WebhookDeliveryStatus,
        httpStatus: number | null,
        error: string | null,
      ) => {
        countWebhookDelivery(status);
        return deps.store.webhooks.recordDelivery({
          id: newWebhookDeliveryId(),
          endpointId,
          eventId: event.id,
          eventType: event.type,
          sandboxId: event.sandboxId,
          attempt,
          status,
          httpStatus,
          error,
          durationMs: Date.now() - startedAt.getTime(),
        });
      };
      const fields = { endpoint_id: endpointId, event_id: event.id, attempt };
      let status: number;
      try {
        ({ status } = await postWebhook(target.url, { ...headers }, body, guard, options));
      } catch (err) {
        const message = err instanceof Error ? err.message : String(err);
        if (err instanceof WebhookTargetRefusedError) {
          const kept = `${message}; the event is kept: once the address is allowed, recover it (durable-sandbox webhooks recover ${endpointId} --since …)`;
          await record('refused', null, kept);
          await deps.store.webhooks.settleEvent(claim, 'refused');
          log.warn('webhook target refused', { ...fields, error: message });
          throw ApplicationFailure.create({
            type: WEBHOOK_TARGET_REFUSED,
            message: kept,
            nonRetryable: true,
          });
        }
        await record('failed', null, message);
        log.info('webhook attempt failed', { ...fields, error: message });
        throw ApplicationFailure.retryable(`delivery failed: ${message}`, 'WebhookDeliveryFailed');
      }
      if (status < 200 || status > 299) {
        const message =
          status >= 300 && status < 400
            ? `the receiver answered ${status}; redirects are not followed`
            : `the receiver answered ${status}`;
        await record('failed', status, message);
        log.info('webhook attempt failed', { ...fields, http_status: status });
        throw ApplicationFailure.retryable(message, 'WebhookDeliveryFailed');
      }
      await record('succeeded', status, null);
      await deps.store.webhooks.settleEvent(claim, 'succeeded');
      log.info('webhook delivered', { ...fields, http_status: status });
      return 'delivered';
    },
  };
}
