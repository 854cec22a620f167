/**
 * The real apiserver tier as `npm start`'s cluster (`CLUSTER=real`): etcd + kube-apiserver
 * (apiserver-tier/launcher.ts) with the sandbox namespace prepared, and the node agent
 * (node-agent/agent.ts) in kubelet's place, configured like the simulated node, with the
 * scheduler stand-in (node-agent/scheduler.ts) binding pods to it. Like the
 * simulated cluster it does not survive a restart (its etcd lives in a temporary directory).
 */
import { join } from 'node:path';
import { writeKubeconfigFile } from '../simulated-cluster/kubeconfig.js';
import { startTierNodes, type TierNodes } from '../node-agent/tier-nodes.js';
import { startApiserverTier } from './launcher.js';

/** Options of {@link startEmbeddedRealCluster}. */
export interface EmbeddedRealClusterOptions {
  /** Where the kubeconfigs are written (`kubeconfig`, `kubeconfig-admin`). */
  dataDir: string;
  /** The sandbox namespace to prepare (SANDBOX_NAMESPACE). */
  namespace: string;
  /** The node agent's start-up delay, in ms. */
  nodeDelayMs: number;
  /** Template name -> rootfs size in MiB on the node agent (default `{ base: 451 }`). */
  rootfsMib?: Record<string, number>;
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
  let nodes: TierNodes;
  try {
    nodes = await startTierNodes(tier, {
      startupDelayMs: options.nodeDelayMs,
      rootfsMib: options.rootfsMib,
      onError: (err, what) => options.log(`node agent: ${what}: ${String(err)}`),
    });
  } catch (err) {
    await tier.stop();
    throw err;
  }
  const stopAll = async () => {
    await nodes.stop();
    await tier.stop();
  };
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
    stop: stopAll,
  };
}
