/**
 * Templates and their rootfs floors (docs/configuration.md, "Templates"; docs/architecture.md, "Rootfs floors"):
 * the smallest disk, in MiB, a template's image can run with. Types only, so the workflow bundle
 * may import it.
 */

/**
 * Where a template's floor comes from: `declared` in SANDBOX_TEMPLATES (`rootfs_mib`), `learned`
 * from a node's decisive refusal of the image, or `unknown`. A declared floor wins.
 */
export type RootfsFloorSource = 'declared' | 'learned' | 'unknown';

/**
 * A floor learned from a node's decisive refusal of an image: the cloned rootfs size the node
 * stated, and the evidence. `learnedAtMs`: the refusal event's time (epoch ms).
 */
export interface LearnedRootfsFloor {
  image: string;
  /** The template the refused create named. */
  template: string;
  rootfsMib: number;
  learnedAtMs: number;
  operationId: string;
  tenantId: string;
  nodeName: string | null;
  /** The node's reason, as the create's failure named it. */
  reason: string;
}

/** A template's effective floor: declared, learned (with its evidence), or unknown. */
export type RootfsFloor =
  | { source: 'declared'; rootfsMib: number }
  | { source: 'learned'; rootfsMib: number; learned: LearnedRootfsFloor }
  | { source: 'unknown' };
