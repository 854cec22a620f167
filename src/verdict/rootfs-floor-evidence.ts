/**
 * The floor a node's refusal teaches about an image (docs/architecture.md, "Rootfs floors"), as
 * it is stored: shared by the workflow's retirement (src/activities/store.ts) and the decision
 * (src/verdict/outcome-at-decision.ts), so both store the same row for the same refusal.
 */
import {
  RESOURCE_LIMITS,
  type LearnedRootfsFloor,
  type RootfsFloorEvidence,
} from '../../contract/index.js';
import { CLOCK_SKEW_ALLOWANCE_MS } from './refusal-bounds.js';

/** The fields a log line about a floor (learned, or out of bounds) carries. */
export function floorFields(
  floor: Pick<RootfsFloorEvidence, 'image' | 'template' | 'rootfsMib' | 'nodeName'>,
): Record<string, string | number | null> {
  return {
    image: floor.image,
    template: floor.template,
    rootfs_mib: floor.rootfsMib,
    node_name: floor.nodeName,
  };
}

/**
 * The row to store for `evidence`, learned by `operationId`: its time is the refusal event's,
 * else `nowMs`. The stored `reason` is only the size the node stated (`cloned rootfs size <n>
 * MiB`): the node's full text names the refused request's disk, another tenant's value for
 * everyone else who reads the floor (docs/security.md, "Refusal events and learned floors").
 * @returns undefined for evidence out of bounds (a time more than the clock-skew allowance in the
 *   future, a size above any create's largest disk): the wait's bounds
 *   (src/verdict/refusal-bounds.ts) keep it from reaching here, and this keeps a caller that
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
