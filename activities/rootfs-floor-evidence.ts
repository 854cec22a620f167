/**
 * The floor a node's refusal teaches about an image (docs/architecture.md, "Rootfs floors"), as
 * it is stored: shared by the workflow's retirement (activities/store.ts) and the decision
 * (activities/outcome-at-decision.ts), so both store the same row for the same refusal.
 */
import { RESOURCE_LIMITS, type LearnedRootfsFloor } from '../contract/index.js';
import { CLOCK_SKEW_ALLOWANCE_MS } from '../kubernetes/refusal-bounds.js';

/**
 * What a create refused by a node teaches about its image: the stated rootfs size in MiB and
 * the evidence; `eventAt` is the refusal event's lastTimestamp (ISO-8601), when it had one.
 */
export type RootfsFloorEvidence = Omit<LearnedRootfsFloor, 'learnedAtMs' | 'operationId'> & {
  eventAt?: string;
};

/**
 * The row to store for `evidence`, learned by `operationId`: its time is the refusal event's,
 * else `nowMs`. The stored `reason` is only the size the node stated (`cloned rootfs size <n>
 * MiB`): the node's full text names the refused request's disk, another tenant's value for
 * everyone else who reads the floor (docs/security.md, "Refusal events and learned floors").
 * @returns undefined for evidence out of bounds (a time more than the clock-skew allowance in the
 *   future, a size above any create's largest disk): the wait's bounds
 *   (kubernetes/refusal-bounds.ts) keep it from reaching here, and this keeps a caller that
 *   carries it anyway from teaching it
 */
export function rootfsFloorOf(
  operationId: string,
  evidence: RootfsFloorEvidence,
  nowMs: number,
): LearnedRootfsFloor | undefined {
  const { eventAt, reason: _nodeText, ...floor } = evidence;
  const eventAtMs = eventAt ? Date.parse(eventAt) : NaN;
  const learnedAtMs = Number.isFinite(eventAtMs) ? eventAtMs : nowMs;
  if (learnedAtMs > nowMs + CLOCK_SKEW_ALLOWANCE_MS || floor.rootfsMib > RESOURCE_LIMITS.diskMib) {
    return undefined;
  }
  return {
    ...floor,
    reason: `cloned rootfs size ${floor.rootfsMib} MiB`,
    operationId,
    learnedAtMs,
  };
}
