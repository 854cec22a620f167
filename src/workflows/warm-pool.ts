/**
 * The `warmPool` workflow (docs/architecture.md, "Warm pools"): one per template with a pool
 * (workflow id `warm-pool/<task queue>/<template>`), started by every worker at start (signal-with-start, so
 * many workers make one pool). It reconciles the pool (src/activities/warm-pool-pods.ts) and then waits:
 * a durable timer until the reconcile's `waitMs` (1 s while pods start, the back-off's end, 60 s
 * at rest), or the `warmPoolChanged` signal a claim or the scale route sends, whichever is first.
 * Its back-off memory (failures in a row) lives here, and goes on through continue-as-new.
 *
 * Deterministic: no I/O, time only from the workflow API.
 */
import {
  condition,
  continueAsNew,
  defineSignal,
  proxyActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { CreateActivities } from '../activities/index.js';
import { WARM_POOL_CHANGED_SIGNAL, WARM_POOL_COALESCE_MS } from '../../contract/index.js';
import type { PlanHistory } from '../activities/warm-pool-plan.js';

/** A claim or a new size: reconcile now. */
export const warmPoolChanged = defineSignal(WARM_POOL_CHANGED_SIGNAL);

/** Input of {@link warmPool}: the template, and the back-off memory carried over. */
export interface WarmPoolInput {
  template: string;
  history?: PlanHistory;
}

/** The reconcile: idempotent (it lists before it acts), retried until it succeeds. */
const reconcileStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '60 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '30 seconds' },
});

/** Reconciles before continuing as new, at most (each is an activity and a timer in history). */
const RECONCILES_PER_RUN = 500;

/**
 * Keeps the template's pool at its size until the catalog drops the pool and its last pod is
 * gone.
 */
export async function warmPool(input: WarmPoolInput): Promise<void> {
  let changed = false;
  setHandler(warmPoolChanged, () => {
    changed = true;
  });
  let history: PlanHistory = input.history ?? { failures: 0, backOffUntilMs: 0 };
  for (let reconciles = 0; ; reconciles += 1) {
    if (reconciles >= RECONCILES_PER_RUN || workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof warmPool>({ template: input.template, history });
    }
    changed = false;
    const result = await reconcileStep.reconcileWarmPool({ template: input.template, history });
    history = result.history;
    if (result.ended) return;
    // Woken by a claim or a scale: let the claims of a burst gather before the next reconcile,
    // so a burst costs a few reconciles, not one per claim.
    if (await condition(() => changed, result.waitMs)) await sleep(WARM_POOL_COALESCE_MS);
  }
}
