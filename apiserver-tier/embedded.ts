/**
 * The real apiserver tier as `npm start`'s cluster (`CLUSTER=real`): etcd + kube-apiserver
 * (apiserver-tier/launcher.ts) with the sandbox namespace prepared, and the node agent
 * (node-agent/agent.ts) in kubelet's place, configured like the simulated node. Like the
 * simulated cluster it does not survive a restart (its etcd lives in a temporary directory).
 */
import { join } from 'node:path';
import { writeKubeconfigFile } from '../simulated-cluster/kubeconfig.js';
import { NodeAgent } from '../node-agent/agent.js';
import { startApiserverTier } from './launcher.js';

/** Options of {@link startEmbeddedRealCluster}. */
export interface EmbeddedRealClusterOptions {
  /** Where the kubeconfigs are written (`kubeconfig`, `kubeconfig-admin`). */
  dataDir: string;
  /** The sandbox namespace to prepare (SANDBOX_NAMESPACE). */
  namespace: string;
  /** The node agent's start-up delay, in ms. */
  nodeDelayMs: number;
  /** Receives the servers' output lines and the agent's survived errors. */
  log: (line: string) => void;
}

/** A running embedded real cluster. */
export interface EmbeddedRealCluster {
  /** `https://127.0.0.1:<port>` */
  url: string;
  nodeName: string;
  /** The service's kubeconfig (user `durable-sandbox`, namespace set). */
  kubeconfigPath: string;
  /** An admin kubeconfig for kubectl (namespace set). */
  adminKubeconfigPath: string;
  /** Time from start to `/readyz` answering 200, in ms. */
  startToReadyMs: number;
  /** Stops the node agent, kube-apiserver and etcd. */
  stop(): Promise<void>;
}

/**
 * Starts the tier and the node agent and writes both kubeconfigs.
 * @throws Error when a binary cannot be found or built, or the tier does not become ready
 */
export async function startEmbeddedRealCluster(
  options: EmbeddedRealClusterOptions,
): Promise<EmbeddedRealCluster> {
  const tier = await startApiserverTier({ namespace: options.namespace, log: options.log });
  let agent: NodeAgent;
  try {
    agent = await NodeAgent.start({
      kubelet: tier.kubeConfig('node'),
      scheduler: tier.kubeConfig('scheduler'),
      nodeName: tier.nodeName,
      startupDelayMs: options.nodeDelayMs,
      onError: (err, what) => options.log(`node agent: ${what}: ${String(err)}`),
    });
  } catch (err) {
    await tier.stop();
    throw err;
  }
  const kubeconfigPath = join(options.dataDir, 'kubeconfig');
  const adminKubeconfigPath = join(options.dataDir, 'kubeconfig-admin');
  writeKubeconfigFile(kubeconfigPath, tier.kubeconfigYaml('durable-sandbox', options.namespace));
  writeKubeconfigFile(adminKubeconfigPath, tier.kubeconfigYaml('admin', options.namespace));
  return {
    url: tier.url,
    nodeName: tier.nodeName,
    kubeconfigPath,
    adminKubeconfigPath,
    startToReadyMs: tier.startToReadyMs,
    async stop() {
      await agent.stop();
      await tier.stop();
    },
  };
}
