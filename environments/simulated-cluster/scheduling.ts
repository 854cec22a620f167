/**
 * The scheduler's pure rules, shared by the simulated cluster's scheduler
 * (simulated-cluster/scheduler.ts) and the node agent's binding step on a real apiserver
 * (node-agent/scheduler.ts): which nodes a pod's required node affinity allows, which node it
 * is bound to, and the words kube-scheduler uses when none fits. No I/O, no clock.
 *
 * Only what the service asks of a scheduler is modelled: `requiredDuringSchedulingIgnoredDuringExecution`
 * node selector terms whose match expressions use `In`, `NotIn`, `Exists` or `DoesNotExist` on
 * the node's labels (every node carries `kubernetes.io/hostname=<its name>`, as kubelet sets it).
 * Terms are ORed, expressions of a term ANDed (Kubernetes API, "Assigning Pods to Nodes: node
 * affinity"). Among the nodes allowed, the first in the cluster's order wins, so a test knows
 * where a pod lands; kube-scheduler would score them.
 */

/** The node label kubelet sets to the node's name. */
export const HOSTNAME_LABEL = 'kubernetes.io/hostname';

/** The reason and the event reason kube-scheduler records for a pod no node can take. */
export const UNSCHEDULABLE_REASON = 'Unschedulable';
export const FAILED_SCHEDULING_REASON = 'FailedScheduling';

/** One match expression of a node selector term (core/v1 NodeSelectorRequirement). */
export interface NodeSelectorRequirementLike {
  key?: string;
  operator?: string;
  values?: string[];
}

/** The part of a pod spec these rules read. */
export interface AffinitySpecLike {
  affinity?: {
    nodeAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: {
        nodeSelectorTerms?: Array<{ matchExpressions?: NodeSelectorRequirementLike[] }>;
      };
    };
  };
}

/** The labels of a node as kubelet registers it. */
export function nodeLabels(nodeName: string): Record<string, string> {
  return { [HOSTNAME_LABEL]: nodeName };
}

/**
 * Whether the pod's required node affinity allows a node with these labels. No required
 * affinity allows every node; an unknown operator allows none (kube-scheduler refuses it at
 * validation).
 */
export function nodeAffinityAllows(
  spec: AffinitySpecLike | undefined,
  labels: Record<string, string>,
): boolean {
  const terms =
    spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (!terms || terms.length === 0) return true;
  return terms.some((term) => (term.matchExpressions ?? []).every((e) => matches(e, labels)));
}

function matches(
  requirement: NodeSelectorRequirementLike,
  labels: Record<string, string>,
): boolean {
  const value = requirement.key === undefined ? undefined : labels[requirement.key];
  const values = requirement.values ?? [];
  switch (requirement.operator) {
    case 'In':
      return value !== undefined && values.includes(value);
    case 'NotIn':
      return value === undefined || !values.includes(value);
    case 'Exists':
      return value !== undefined;
    case 'DoesNotExist':
      return value === undefined;
    default:
      return false;
  }
}

/**
 * The node a pod is bound to: the first of `nodeNames` its required node affinity allows.
 * @returns the node's name, or undefined when none fits
 */
export function pickNode(
  spec: AffinitySpecLike | undefined,
  nodeNames: readonly string[],
): string | undefined {
  return nodeNames.find((name) => nodeAffinityAllows(spec, nodeLabels(name)));
}

/**
 * kube-scheduler's message for a pod no node fits because of its node affinity, e.g.
 * `0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.`
 * (kube-scheduler's `FitError`, preemption suffix left out).
 */
export function unschedulableMessage(nodeCount: number): string {
  return `0/${nodeCount} nodes are available: ${nodeCount} node(s) didn't match Pod's node affinity/selector.`;
}
