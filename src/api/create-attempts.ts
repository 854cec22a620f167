/**
 * A create's `attempts` (docs/api.md, "Operations"; AIP-151 metadata beside `path` and
 * `placements`): how many pods the create placed, the warm pod it claimed counting as one. Each
 * placement a node refused counts one (`details.placements`), and the pod the create last recorded
 * counts one more when it is not one of those: the pod it runs on, waits for, or that was
 * unschedulable. 0 before its first pod (and for a create cancelled or refused before one).
 * Activity retries (a `createPod` the apiserver answered 500 and Temporal tried again) do not
 * count: they make the same pod, by name.
 *
 * Derived from what the store already holds, with no workflow change: the operation row's refused
 * placements and the sandbox row (read in the same query) whose recorded pod name is its last
 * placement's (src/kubernetes/pod-spec.ts: `…-g<generation>` for placement 1, `…-p<n>` after).
 */
import type { OperationRecord } from '../store/index.js';

/**
 * The attempts of an operation from its store row.
 * @returns a count (0 or more) for a `sandbox.create`; null for a `sandbox.delete`
 */
export function createAttemptsOf(
  record: Pick<OperationRecord, 'id' | 'type' | 'placements' | 'sandbox'>,
): number | null {
  if (record.type !== 'sandbox.create') return null;
  const sandbox = record.sandbox;
  const lastPod = sandbox?.operationId === record.id ? sandbox.pod.name : null;
  const refused = new Set(record.placements.map((placement) => placement.podName));
  return record.placements.length + (lastPod && !refused.has(lastPod) ? 1 : 0);
}
