/**
 * The create's activities, built from their dependencies so the worker wires real ones and
 * tests wire real ones pointed at the simulated cluster and a temporary database.
 */
import type { TenantLimitsConfig } from '../config/index.js';
import { admissionActivities } from './admission.js';
import { podActivities, type PodActivityDeps } from './pods.js';
import { operationActivities } from './operation-wait.js';
import { storeActivities } from './store.js';
import { lifetimeActivities } from './lifetime.js';
import { webhookActivities, type WebhookActivityDeps } from './webhook-delivery.js';
import { warmPoolActivities } from './warm-pool-pods.js';
import { retentionActivities } from './retention.js';

/** Everything the activities need. */
export type ActivityDeps = PodActivityDeps &
  Pick<WebhookActivityDeps, 'webhooks'> & {
    /**
     * TENANT_LIMITS, as the API reads it: the fairness weight of the workflows the steps start
     * (lifetimes, expiry deletes, webhook deliveries; src/temporal/priority.ts). Unset: weight 1.
     */
    tenantLimits?: TenantLimitsConfig;
  };

/** Builds every activity of the create workflow. */
export function createActivities(deps: ActivityDeps) {
  return {
    ...admissionActivities(deps),
    ...podActivities(deps),
    ...storeActivities(deps),
    ...lifetimeActivities(deps),
    ...operationActivities(),
    ...webhookActivities(deps),
    ...warmPoolActivities(deps),
    ...retentionActivities(deps),
  };
}

/** The activity interface the workflow proxies. */
export type CreateActivities = ReturnType<typeof createActivities>;
