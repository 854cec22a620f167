/**
 * The ids every activity log line carries, added once by a Temporal activity interceptor
 * instead of by hand in each activity: `operation_id`, `sandbox_id` and, when the input names
 * the pod, `pod_uid`, read from the activity's input. The activities log with the SDK's
 * activity logger (`log` from `@temporalio/activity`), which also attaches the activity's own
 * attributes (workflow id, activity type, attempt); src/worker/runtime.ts sends it all to pino.
 * SDK reference: "Activity logging" and `ActivityOutboundCallsInterceptor.getLogAttributes`.
 */
import type { ActivityInterceptorsFactory } from '@temporalio/worker';

/** The log fields of one activity input, snake_case as in every log line. */
export function logIdsOf(input: unknown): Record<string, string> {
  if (input === null || typeof input !== 'object') return {};
  const { operationId, sandboxId, podUid, pod } = input as {
    operationId?: unknown;
    sandboxId?: unknown;
    podUid?: unknown;
    pod?: { uid?: unknown } | null;
  };
  const ids: Record<string, string> = {};
  if (typeof operationId === 'string') ids.operation_id = operationId;
  if (typeof sandboxId === 'string') ids.sandbox_id = sandboxId;
  const uid = typeof podUid === 'string' ? podUid : pod?.uid;
  if (typeof uid === 'string') ids.pod_uid = uid;
  return ids;
}

/** The interceptor: remembers the input's ids and adds them to each log line of the activity. */
export const activityLogIds: ActivityInterceptorsFactory = () => {
  let ids: Record<string, string> = {};
  return {
    inbound: {
      execute(input, next) {
        ids = logIdsOf(input.args[0]);
        return next(input);
      },
    },
    outbound: {
      getLogAttributes(attributes, next) {
        return next({ ...attributes, ...ids });
      },
    },
  };
};
