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

/**
 * The effects a taint may have and a toleration may name (Kubernetes core/v1 `Toleration.effect`;
 * empty matches every effect).
 */
export const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] as const;
/** A taint effect. */
export type TaintEffect = (typeof TAINT_EFFECTS)[number];

/** A toleration's operator (core/v1 `Toleration.operator`; default `Equal`). */
export const TOLERATION_OPERATORS = ['Exists', 'Equal'] as const;
/** A toleration operator. */
export type TolerationOperator = (typeof TOLERATION_OPERATORS)[number];

/**
 * A toleration of the sandbox pod, spelled as Kubernetes spells core/v1 `Toleration`, so an
 * operator copies it from a node's taint or another manifest as is.
 * `tolerationSeconds` (only with effect `NoExecute`): how long the pod stays bound after such a
 * taint appears, in seconds.
 */
export interface SandboxToleration {
  key?: string;
  operator?: TolerationOperator;
  value?: string;
  effect?: TaintEffect;
  tolerationSeconds?: number;
}

/**
 * What a template decides about its pod's isolation (docs/configuration.md, "Templates";
 * docs/security.md, "What the worker trusts"): read by the worker from its own catalog, never
 * from a workflow's input.
 * - `runAsNonRoot`: the pod's `securityContext.runAsNonRoot`; true by default (the kubelet then
 *   refuses to start an image whose user is root), false for a template that opted out with
 *   `run_as_root`. With it the pod meets Pod Security `restricted`, without it `baseline`.
 * - `runtimeClassName`: a RuntimeClass (gVisor, Kata) the pod runs with.
 * - `nodeSelector`: node labels the pod's node must carry.
 * - `tolerations`: taints of dedicated sandbox nodes the pod tolerates.
 */
export interface SandboxPodSettings {
  runAsNonRoot: boolean;
  runtimeClassName?: string;
  nodeSelector?: Record<string, string>;
  tolerations?: SandboxToleration[];
}
