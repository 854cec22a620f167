/**
 * How a readiness wait is named in Temporal (docs/architecture.md, "Waiting costs nothing"): the
 * create workflow schedules the wait of a pod under an activity id made from the pod's uid, so
 * any worker that sees the pod's decisive change completes it by workflow id and activity id
 * (`RespondActivityTaskCompletedById`), with nothing recorded beside Temporal's own pending
 * activity. Pure; the workflow bundle imports it.
 */

/** The prefix of every readiness wait's activity id. */
export const READINESS_WAIT_ACTIVITY_ID_PREFIX = 'await-pod-ready/';

/**
 * The activity id of the readiness wait for the pod `podUid` (`await-pod-ready/<uid>`): unique
 * within its workflow (each placement makes a new pod), the same for every attempt of the wait.
 */
export function readinessWaitActivityId(podUid: string): string {
  return `${READINESS_WAIT_ACTIVITY_ID_PREFIX}${podUid}`;
}
