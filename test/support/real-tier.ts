/**
 * The real apiserver tier for one suite: etcd + kube-apiserver (apiserver-tier/launcher.ts) and
 * one node agent per node playing kubelet (node-agent/agent.ts) and one scheduler binding pods
 * to them (node-agent/scheduler.ts), plus fresh namespaces (a
 * namespace is never deleted: with no namespace controller its deletion never completes).
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import {
  startApiserverTier,
  type ApiserverTier,
} from '../../environments/apiserver-tier/launcher.js';
import type { NamespaceOptions } from '../../environments/apiserver-tier/namespace.js';
import type { NodeAgent } from '../../environments/node-agent/agent.js';
import {
  startTierNodes,
  type TierNodes,
  type TierNodesOptions,
} from '../../environments/node-agent/tier-nodes.js';

/** What a real-tier suite gets. */
export interface RealTier {
  tier: ApiserverTier;
  /** The first node's agent. */
  agent: NodeAgent;
  /** Every node's agent by node name, in the scheduler's order. */
  agents: Map<string, NodeAgent>;
  /** The admin's KubeConfig and CoreV1Api, for arranging and inspecting. */
  admin: KubeConfig;
  adminCore: CoreV1Api;
  /** Errors the node agents and the scheduler survived (a test may assert there were none). */
  agentErrors: Array<{ what: string; err: unknown }>;
  /**
   * Creates and prepares a namespace named `<prefix>-<random>` (deploy/rbac.yaml bound to the
   * `durable-sandbox` user) and returns its name.
   */
  freshNamespace(prefix: string, options?: NamespaceOptions): Promise<string>;
  /** The service's target in a namespace: the `durable-sandbox` user's kubeconfig. */
  serviceTarget(namespace: string): { kubeconfigYaml: string; namespace: string };
  /** Stops the scheduler, the agents and the tier. */
  stop(): Promise<void>;
}

/**
 * Starts the tier (no namespace prepared), one node agent per node (`nodeNames`, default one
 * node `agent-node-1`) and the scheduler. Call `stop()` in afterAll.
 */
export async function startRealTier(
  agentOptions: TierNodesOptions = {},
  tierOptions: { nodeNames?: string[] } = {},
): Promise<RealTier> {
  const tier = await startApiserverTier({
    namespace: null,
    nodeNames: tierOptions.nodeNames,
    log: process.env.TEST_LOGS ? (line) => process.stderr.write(`${line}\n`) : undefined,
  });
  const agentErrors: RealTier['agentErrors'] = [];
  const onError = (err: unknown, what: string) => agentErrors.push({ what, err });
  let nodes: TierNodes;
  try {
    nodes = await startTierNodes(tier, { startupDelayMs: 100, ...agentOptions, onError });
  } catch (err) {
    await tier.stop();
    throw err;
  }
  const stopAll = async () => {
    await nodes.stop();
    await tier.stop();
  };
  const { agents } = nodes;
  const agent = agents.get(tier.nodeName) as NodeAgent;
  const admin = tier.kubeConfig('admin');
  return {
    tier,
    agent,
    agents,
    admin,
    adminCore: admin.makeApiClient(CoreV1Api),
    agentErrors,
    async freshNamespace(prefix, options) {
      const name = `${prefix}-${randomBytes(3).toString('hex')}`;
      await tier.prepareNamespace(name, options);
      return name;
    },
    serviceTarget(namespace) {
      return { kubeconfigYaml: tier.kubeconfigYaml('durable-sandbox', namespace), namespace };
    },
    stop: stopAll,
  };
}
