/**
 * The `sandboxLifetime` workflow (docs/api.md, "Lifetimes"; docs/architecture.md, "Lifetimes"):
 * one per sandbox with an expiry (workflow id `lifetime-<sandbox id>`), started by the create's
 * `markSandboxRunning` step when the sandbox runs. A durable timer until its `expire_time`;
 * an extend signals the new time; when the timer fires, `expireSandbox` (a local activity, in
 * the workflow task the timer wakes) deletes the sandbox through the `deleteSandbox` workflow
 * (cause `expired`) unless the store holds a later time or the sandbox no longer runs. A delete
 * cancels it. Waiting costs one timer: no activity, no slot, no poll.
 *
 * Deterministic: no I/O, time only from the workflow API.
 */
import {
  CancellationScope,
  condition,
  continueAsNew,
  defineSignal,
  isCancellation,
  log,
  patched,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  workflowInfo,
} from '@temporalio/workflow';
import type { CreateActivities } from '../activities/index.js';
import {
  EXPIRE_TIME_SIGNAL,
  type ExpiryOutcome,
  type SandboxLifetimeInput,
} from '../../contract/index.js';

/** The extend's wake-up: the sandbox's new `expire_time` (ISO-8601). */
export const expireTimeChanged = defineSignal<[string]>(EXPIRE_TIME_SIGNAL);

/**
 * Patch (docs/testing.md, "Patch exit plan"): the expiry step runs as a local activity, in the
 * workflow task its timer wakes, instead of an activity task of its own (one workflow task and
 * an activity dispatch fewer per expiry). A lifetime that ran the step as an activity before
 * this release replays that branch.
 */
export const EXPIRY_LOCAL_ACTIVITY_PATCH = 'expiry-local-activity';

/** How the expiry step is retried: until it succeeds (idempotent store reads, one workflow start). */
const expiryRetry = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '30 seconds',
} as const;

/**
 * The expiry step as a local activity (Temporal, "Local Activities"): short store reads and
 * writes on the worker's own database and one workflow start, retried until they succeed.
 */
const expiryLocalStep = proxyLocalActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  retry: expiryRetry,
});

/** The expiry step as an activity task: lifetimes that ran it so before this release. */
const expiryStep = proxyActivities<CreateActivities>({
  startToCloseTimeout: '30 seconds',
  retry: expiryRetry,
});

/**
 * When the store still holds the time the timer fired for (the worker's clock behind the
 * server's), wait this long before looking again, in ms, so the lifetime never spins.
 */
const RECHECK_MS = 1_000;

/**
 * Lives as long as the sandbox's lifetime.
 * @returns what the expiry found: the delete it started, or that the sandbox had ended
 * Ends cancelled when the sandbox is deleted first (src/activities/lifetime.ts `endLifetime`).
 */
export async function sandboxLifetime(input: SandboxLifetimeInput): Promise<ExpiryOutcome> {
  let expireAtMs = Date.parse(input.expireTime);
  setHandler(expireTimeChanged, (expireTime) => {
    const ms = Date.parse(expireTime);
    if (Number.isFinite(ms)) expireAtMs = ms;
  });
  let recheck = false;
  for (;;) {
    if (workflowInfo().continueAsNewSuggested) {
      await continueAsNew<typeof sandboxLifetime>({
        ...input,
        expireTime: new Date(expireAtMs).toISOString(),
      });
    }
    const timerFor = expireAtMs;
    const waitMs = Math.max(timerFor - Date.now(), recheck ? RECHECK_MS : 0);
    if (waitMs > 0) {
      try {
        // Woken early by an extend: wait for the new time.
        if (await condition(() => expireAtMs !== timerFor, waitMs)) continue;
      } catch (err) {
        if (isCancellation(err)) log.info('lifetime ended before expiry', { ...input });
        throw err;
      }
    }
    // Once the timer fired, the expiry finishes even if the delete it starts cancels this.
    const step = patched(EXPIRY_LOCAL_ACTIVITY_PATCH) ? expiryLocalStep : expiryStep;
    const outcome = await CancellationScope.nonCancellable(() =>
      step.expireSandbox({ sandboxId: input.sandboxId }),
    );
    if (outcome.kind !== 'extended') {
      log.info('lifetime over', { sandbox_id: input.sandboxId, outcome: outcome.kind });
      return outcome;
    }
    const later = Date.parse(outcome.expireTime);
    recheck = later <= timerFor;
    expireAtMs = later;
  }
}
