/**
 * What a sandbox pod says about its readiness wait (docs/architecture.md, "Waiting costs
 * nothing"): the workflow that waits for it, and what else ends the wait of a re-placing create,
 * read from the annotations the create put on it (src/kubernetes/pod-spec.ts). With the pod's uid this
 * names the wait in Temporal (contract/readiness-wait.ts); no store row is read.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { WaitPlacement } from '../../contract/index.js';
import type { PodRef } from '../kubernetes/pods.js';
import { POD_ANNOTATIONS, POD_LABELS, placementOf } from '../kubernetes/pod-spec.js';

/** The readiness wait a pod names: its workflow, the pod, and a re-placing wait's policy. */
export interface PodWait {
  /** The create's workflow id (= operation id). */
  workflowId: string;
  pod: PodRef;
  /** The sandbox the pod runs (its sandbox-id label), for the logs. */
  sandboxId?: string;
  /** Absent: the create does not re-place (only a decisive refusal ends the wait early). */
  placement?: WaitPlacement;
}

/**
 * The readiness wait `pod` names.
 * @returns undefined for a pod without a uid or the operation annotation (a warm pool's pod, or
 *   one made by a release whose waits are not completed by id)
 */
export function podWaitOf(pod: V1Pod): PodWait | undefined {
  const annotations = pod.metadata?.annotations ?? {};
  const workflowId = annotations[POD_ANNOTATIONS.operationId];
  const uid = pod.metadata?.uid;
  if (!workflowId || !uid) return undefined;
  const sandboxId = pod.metadata?.labels?.[POD_LABELS.sandboxId];
  return {
    workflowId,
    pod: { name: pod.metadata?.name ?? '', uid },
    ...(sandboxId ? { sandboxId } : {}),
    ...waitPlacementOf(pod),
  };
}

/**
 * The re-placement policy of a wait from a pod's annotations: `replace_on` codes from the
 * replace-on annotation, and unschedulable ends the wait from the second placement on (as the
 * workflow passes it to the wait activity: src/workflows/create-sandbox.ts).
 */
function waitPlacementOf(pod: V1Pod): { placement?: WaitPlacement } {
  const codes = pod.metadata?.annotations?.[POD_ANNOTATIONS.replaceOn];
  if (codes === undefined) return {};
  return {
    placement: {
      replaceOn: codes.split(',').filter((code) => code.length > 0),
      endOnUnschedulable: placementOf(pod) > 1,
    },
  };
}
