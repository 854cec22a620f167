/**
 * What wakes a long-poll of a sandbox (`GET /v1/sandboxes/{id}?wait=`, docs/api.md,
 * "Long-poll"): the sandbox's row changes under three notifier keys (src/store/operation-notifier.ts),
 * so a waiter listens on all three:
 * - its create operation's id: the create's writes (its pod, running, its failure) advance that
 *   operation in the same transaction;
 * - its tenant's feed ({@link feedChangeKey}): every event (`sandbox.running`, `.deleted` with
 *   its cause, `.lost`, `.failed`) is written when the state it tells of is;
 * - {@link sandboxChangeKey}: the writes that neither advance an operation nor record an event
 *   (its labels, its `expire_time`).
 * A notification says only "look again": the waiter re-reads the row and compares its tag.
 */
import { feedChangeKey } from './event-feed.js';

/** The notifier key of one sandbox's own writes (labels, expire_time). */
export function sandboxChangeKey(sandboxId: string): string {
  return `sandbox:${sandboxId}`;
}

/** Every key a change of `sandbox` is announced under. */
export function sandboxWakeKeys(sandbox: {
  id: string;
  tenant: string;
  operationId: string;
}): string[] {
  return [sandbox.operationId, feedChangeKey(sandbox.tenant), sandboxChangeKey(sandbox.id)];
}
