/**
 * The real apiserver tier for one suite: etcd + kube-apiserver (apiserver-tier/launcher.ts) and
 * a node agent playing kubelet and scheduler (node-agent/agent.ts), plus fresh namespaces (a
 * namespace is never deleted: with no namespace controller its deletion never completes).
 */
import { randomBytes } from 'node:crypto';
import { CoreV1Api, type KubeConfig } from '@kubernetes/client-node';
import { startApiserverTier, type ApiserverTier } from '../../apiserver-tier/launcher.js';
import type { NamespaceOptions } from '../../apiserver-tier/namespace.js';
import { NodeAgent, type NodeAgentOptions } from '../../node-agent/agent.js';

/** What a real-tier suite gets. */
export interface RealTier {
  tier: ApiserverTier;
  agent: NodeAgent;
  /** The admin's KubeConfig and CoreV1Api, for arranging and inspecting. */
  admin: KubeConfig;
  adminCore: CoreV1Api;
  /** Errors the node agent survived (a test may assert there were none). */
  agentErrors: Array<{ what: string; err: unknown }>;
  /**
   * Creates and prepares a namespace named `<prefix>-<random>` (deploy/rbac.yaml bound to the
   * `durable-sandbox` user) and returns its name.
   */
  freshNamespace(prefix: string, options?: NamespaceOptions): Promise<string>;
  /** The service's target in a namespace: the `durable-sandbox` user's kubeconfig. */
  serviceTarget(namespace: string): { kubeconfigYaml: string; namespace: string };
  /** Stops the agent and the tier. */
  stop(): Promise<void>;
}

/** Starts the tier (no namespace prepared) and the node agent. Call `stop()` in afterAll. */
export async function startRealTier(
  agentOptions: Partial<Omit<NodeAgentOptions, 'kubelet' | 'scheduler'>> = {},
): Promise<RealTier> {
  const tier = await startApiserverTier({
    namespace: null,
    log: process.env.TEST_LOGS ? (line) => process.stderr.write(`${line}\n`) : undefined,
  });
  const agentErrors: RealTier['agentErrors'] = [];
  let agent: NodeAgent;
  try {
    agent = await NodeAgent.start({
      kubelet: tier.kubeConfig('node'),
      scheduler: tier.kubeConfig('scheduler'),
      nodeName: tier.nodeName,
      startupDelayMs: 100,
      ...agentOptions,
      onError: (err, what) => agentErrors.push({ what, err }),
    });
  } catch (err) {
    await tier.stop();
    throw err;
  }
  const admin = tier.kubeConfig('admin');
  return {
    tier,
    agent,
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
    async stop() {
      await agent.stop();
      await tier.stop();
    },
  };
}
