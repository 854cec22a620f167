/**
 * Activity summaries for the Temporal UI: a workflow interceptor module (registered by the
 * worker, src/worker/temporal-worker.ts, and bundled with the workflows) that gives every scheduled activity
 * a one-line summary built from its input, so the timeline of a create says what each step was
 * for ("wait for sbx-…-g1's IP or the node's refusal") rather than only the activity's type.
 * The summary is user metadata on the ScheduleActivityTask command; it changes no command, so
 * recorded histories replay unchanged.
 *
 * Deterministic: no I/O; only the input and the workflow API.
 */
import type {
  ActivityInput,
  Next,
  WorkflowInterceptorsFactory,
  WorkflowOutboundCallsInterceptor,
} from '@temporalio/workflow';
import type { CreateActivities } from '../activities/index.js';

type InputOf<K extends keyof CreateActivities> = Parameters<CreateActivities[K]>[0];

/** A summary for each activity type, from its input (single-line Temporal markdown). */
export const ACTIVITY_SUMMARIES: { [K in keyof CreateActivities]: (input: InputOf<K>) => string } =
  {
    admitCreate: (input) =>
      `check that the store holds create ${input.operationId} of ${input.sandboxId} for tenant ${input.tenantId}`,
    admitDelete: (input) =>
      `check that the store holds delete ${input.operationId} of ${input.sandboxId} for tenant ${input.tenantId}`,
    createPod: (input) =>
      `create pod of ${input.sandboxId} (template ${input.template}, disk ${input.resources.diskMib} MiB, generation ${input.generation}` +
      (input.placement && input.placement > 1
        ? `, placement ${input.placement}, not on ${input.avoidNodes?.join(', ') || 'no node'})`
        : ')'),
    awaitPodReady: (input) =>
      `wait for pod ${input.pod.name}'s IP or the node's refusal` +
      (input.placement
        ? ` (re-place on ${input.placement.replaceOn.join(', ')}${input.placement.endOnUnschedulable ? '; ends if no node is left' : ''})`
        : ''),
    markSandboxRunning: (input) => `mark ${input.sandboxId} running at ${input.podIp}`,
    expireSandbox: (input) =>
      `delete ${input.sandboxId} if its expire_time has passed (a delete with cause expired)`,
    deletePod: (input) =>
      input.pod
        ? `delete pod ${input.pod.name} (uid ${input.pod.uid})`
        : `delete the pod of ${input.sandboxId}, if one was created`,
    retireExecution: (input) =>
      `retire the execution of ${input.sandboxId}: ${input.failure ? `failed, ${input.failure.code}` : input.reason}`,
    recordOperationOutcome: (input) =>
      `publish the outcome of ${input.operationId}: ${input.status}, ${input.error.code}`,
    recordPlacement: (input) =>
      `placement ${input.placement.placement} of ${input.sandboxId}: node ${input.placement.nodeName} refused it (${input.placement.code})`,
    markSandboxDeleted: (input) => `mark ${input.sandboxId} deleted`,
    readSandboxPod: (input) => `read the pod recorded for ${input.sandboxId}`,
    awaitOperationClosed: (input) => `wait until the create ${input.operationId} has closed`,
    claimWarmPod: (input) =>
      `claim a ready pod of template ${input.template}'s warm pool for ${input.sandboxId}, if one is left`,
    reconcileWarmPool: (input) =>
      `reconcile the warm pool of template ${input.template}: delete what must go, make what is missing`,
    deliverWebhook: (input) =>
      `deliver ${input.event.type} of ${input.event.sandboxId} (${input.event.id}) to ${input.endpointId}`,
    purgeAgedRows: (input) =>
      `delete rows past their retention, ${input.batchSize} per batch, at most ${input.maxBatches} batches`,
  };

/**
 * The summary of one scheduled activity, or undefined for an activity type not in the table or
 * an input it cannot read.
 */
export function activitySummary(activityType: string, args: unknown[]): string | undefined {
  const summarize = (ACTIVITY_SUMMARIES as Record<string, (input: never) => string>)[activityType];
  if (!summarize) return undefined;
  try {
    return summarize(args[0] as never);
  } catch {
    return undefined;
  }
}

class ActivitySummaries implements WorkflowOutboundCallsInterceptor {
  scheduleActivity(
    input: ActivityInput,
    next: Next<WorkflowOutboundCallsInterceptor, 'scheduleActivity'>,
  ): Promise<unknown> {
    const summary = input.options.summary ?? activitySummary(input.activityType, input.args);
    return next(summary ? { ...input, options: { ...input.options, summary } } : input);
  }
}

/** The interceptors of this module (the SDK calls it once per workflow execution). */
export const interceptors: WorkflowInterceptorsFactory = () => ({
  outbound: [new ActivitySummaries()],
});
