/**
 * The create's activities, built from their dependencies so the worker wires real ones and
 * tests wire real ones pointed at the simulated cluster and a temporary database.
 */
import { admissionActivities } from './admission.js';
import { podActivities, type PodActivityDeps } from './pods.js';
import { operationActivities } from './operations.js';
import { storeActivities } from './store.js';
import { lifetimeActivities } from './lifetime.js';
import { webhookActivities, type WebhookActivityDeps } from './webhooks.js';
import { warmPoolActivities } from './warm-pools.js';

/** Everything the activities need. */
export type ActivityDeps = PodActivityDeps & Pick<WebhookActivityDeps, 'webhooks'>;

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
  };
}

/** The activity interface the workflow proxies. */
export type CreateActivities = ReturnType<typeof createActivities>;
