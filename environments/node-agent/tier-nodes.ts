/**
 * The real apiserver tier's nodes: one node agent per node name in kubelet's place
 * (node-agent/agent.ts) and the scheduler stand-in binding pods to them
 * (node-agent/scheduler.ts), started together and stopped in reverse order. The tier has no
 * kubelet and no kube-scheduler of its own; every user of the tier (`npm start` with
 * `CLUSTER=real`, the production topology, the real-tier suites) starts its nodes here.
 */
import type { ApiserverTier } from '../apiserver-tier/launcher.js';
import { NodeAgent, type NodeAgentOptions } from './agent.js';
import { PodScheduler } from './scheduler.js';

/** Options of {@link startTierNodes}: the agents' options shared by every node. */
export type TierNodesOptions = Partial<
  Omit<NodeAgentOptions, 'kubelet' | 'nodeName' | 'nodeIndex'>
>;

/** The running nodes of a tier. */
export interface TierNodes {
  /** Every node's agent by node name, in the tier's (and the scheduler's) order. */
  agents: Map<string, NodeAgent>;
  scheduler: PodScheduler;
  /** Stops the scheduler, then the agents. */
  stop(): Promise<void>;
}

/**
 * Starts one node agent per `tier.nodeNames` (each as its `system:node:<name>` user) and the
 * scheduler (as `system:kube-scheduler`). `options.onError` receives what an agent or the
 * scheduler survived.
 * @throws whatever an agent's or the scheduler's start throws, after stopping what started
 */
export async function startTierNodes(
  tier: Pick<ApiserverTier, 'kubeConfig' | 'nodeNames'>,
  options: TierNodesOptions = {},
): Promise<TierNodes> {
  const agents = new Map<string, NodeAgent>();
  let scheduler: PodScheduler | undefined;
  const stop = async () => {
    await scheduler?.stop();
    for (const agent of agents.values()) await agent.stop();
  };
  try {
    for (const [nodeIndex, nodeName] of tier.nodeNames.entries()) {
      const agent = await NodeAgent.start({
        ...options,
        kubelet: tier.kubeConfig(`node:${nodeName}`),
        nodeName,
        nodeIndex,
      });
      agents.set(nodeName, agent);
    }
    scheduler = await PodScheduler.start({
      scheduler: tier.kubeConfig('scheduler'),
      nodeNames: tier.nodeNames,
      onError: options.onError,
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { agents, scheduler, stop };
}
