/**
 * The webhook delivery counter on the worker's registry (docs/observability.md):
 * `durable_sandbox_webhook_deliveries_total{status}`, one per attempt, status `succeeded`,
 * `failed` or `refused` (as `GET /v1/webhook-endpoints/{id}/deliveries` shows them). No tenant or
 * endpoint label: their number is unbounded.
 */
import { Counter } from 'prom-client';
import type { WebhookDeliveryStatus } from '../../contract/index.js';
import { workerRegistry } from './metrics.js';

let shared: Counter<'status'> | undefined;

/** The process's counter, registered once in the worker's registry. */
export function webhookDeliveries(): Counter<'status'> {
  shared ??= new Counter({
    name: 'durable_sandbox_webhook_deliveries_total',
    help: 'Webhook delivery attempts, by outcome: succeeded (2xx), failed (retried), refused (a target delivery may not reach)',
    labelNames: ['status'],
    registers: [workerRegistry],
  });
  return shared;
}

/** Counts one attempt. */
export function countWebhookDelivery(status: WebhookDeliveryStatus): void {
  webhookDeliveries().inc({ status });
}
