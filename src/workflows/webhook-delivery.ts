/**
 * The `webhookDelivery` workflow (docs/webhooks.md): one per endpoint and sandbox (workflow id
 * `webhook-delivery:<endpoint>:<sandbox>`), started or signalled by `emitSandboxEvent`
 * (src/activities/webhook-delivery.ts) with signal-with-start. It delivers its events one at a time in the
 * order they arrived, so a receiver sees a sandbox's `running` before its `deleted`; each
 * delivery is an activity Temporal retries with back-off for up to three days, so a receiver
 * down for an hour still gets every event, at least once, with a stable `webhook-id`. An event
 * whose id it has already taken is dropped (a retried step emits again). It ends once idle.
 *
 * Deterministic: no I/O, time only from the workflow API.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  condition,
  defineSignal,
  log,
  proxyActivities,
  setHandler,
} from '@temporalio/workflow';
import {
  NOT_ADMITTED_FAILURE_TYPE,
  WEBHOOK_EVENT_SIGNAL,
  WEBHOOK_TARGET_REFUSED,
  type WebhookEventRef,
} from '../../contract/index.js';
import type { CreateActivities } from '../activities/index.js';

/** Input of the `webhookDelivery` workflow. */
export interface WebhookDeliveryInput {
  endpointId: string;
  sandboxId: string;
}

/** The signal that hands the workflow an event. */
export const webhookEventSignal = defineSignal<[WebhookEventRef]>(WEBHOOK_EVENT_SIGNAL);

/**
 * One delivery: each attempt has its own timeout (WEBHOOK_TIMEOUT_MS, under a minute) inside
 * this one; Temporal retries after 1 s, 2 s, 4 s, … up to every 5 minutes, for 3 days (the
 * window Standard Webhooks providers commonly give), then gives the event up. A refused target
 * is not retried.
 */
const deliveryStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '2 minutes',
  scheduleToCloseTimeout: '3 days',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '5 minutes',
    nonRetryableErrorTypes: [WEBHOOK_TARGET_REFUSED, NOT_ADMITTED_FAILURE_TYPE],
  },
});

/** How long the workflow waits idle for another event of its sandbox before it ends. */
export const IDLE_BEFORE_END = '1 minute';

/** Event ids a workflow remembers to drop repeats (a sandbox has a handful of events). */
const SEEN_LIMIT = 100;

/** Delivers the events of one sandbox to one endpoint, in order. */
export async function webhookDelivery(input: WebhookDeliveryInput): Promise<{ delivered: number }> {
  const queue: WebhookEventRef[] = [];
  const seen: string[] = [];
  setHandler(webhookEventSignal, (event) => {
    if (seen.includes(event.id)) return;
    seen.push(event.id);
    if (seen.length > SEEN_LIMIT) seen.shift();
    queue.push(event);
  });
  let delivered = 0;
  for (;;) {
    const arrived = await condition(() => queue.length > 0, IDLE_BEFORE_END);
    if (!arrived && queue.length === 0) break;
    const event = queue.shift() as WebhookEventRef;
    try {
      const outcome = await deliveryStep.deliverWebhook({ endpointId: input.endpointId, event });
      if (outcome === 'event_gone') continue;
      if (outcome === 'endpoint_gone') {
        log.info('webhook endpoint deleted; its events are dropped', { event_id: event.id });
        break;
      }
      delivered += 1;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      const cause = err.cause;
      const type = cause instanceof ApplicationFailure ? cause.type : undefined;
      log.warn('webhook event given up', { event_id: event.id, type, error: cause?.message });
    }
  }
  return { delivered };
}
