/**
 * The servers of the warm-pool modes (`pool`, tools/bench/pool.ts; `claims`, tools/bench/claims.ts):
 * the API and the worker as two processes (tools/bench/process-rig.ts) on an in-memory dev server
 * and a simulated cluster whose node answers a pod WARM_NODE_DELAY_MS after it is made (the
 * embedded stack's default), with one template, `warm`, whose pool's pods are made with
 * WARM_RESOURCES; and the count of a pool's ready pods as the apiserver holds them.
 */
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { POD_LABELS } from '../../src/kubernetes/pod-spec.js';
import type { Checkout } from './checkouts.js';
import { ProcessRig } from './process-rig.js';
import { waitUntil } from '../wait-until.js';

/** The namespace of the sandboxes and the pool's pods. */
export const WARM_NAMESPACE = 'sandboxes';
/** The template with the pool. */
export const WARM_TEMPLATE = 'warm';
/** The simulated node's answer delay for a new pod, ms. */
export const WARM_NODE_DELAY_MS = 300;
/** The resources of the pool's pods: a create with them claims one. */
export const WARM_RESOURCES = { cpu: 1, memory_mib: 256, disk_mib: 2048 } as const;

/**
 * Starts the rig with a pool of `size` pods (`maxPending` made at once).
 * @throws what ProcessRig.start throws (a process that exited, or never got ready)
 */
export function startWarmPoolRig(options: {
  label: string;
  checkout?: Checkout;
  size: number;
  maxPending: number;
  env?: Record<string, string>;
}): Promise<ProcessRig> {
  return ProcessRig.start({
    label: options.label,
    checkout: options.checkout,
    cluster: { startupDelayMs: WARM_NODE_DELAY_MS, rootfsMib: { [WARM_TEMPLATE]: 451 } },
    namespace: WARM_NAMESPACE,
    env: {
      SANDBOX_TEMPLATES: JSON.stringify({
        [WARM_TEMPLATE]: {
          image: 'ghcr.io/durable-sandbox/base:1',
          warm_pool: {
            size: options.size,
            resources: WARM_RESOURCES,
            max_pending: options.maxPending,
          },
        },
      }),
      ...options.env,
    },
  });
}

/**
 * How many of `template`'s pool pods in `namespace` are ready and unclaimed: with an IP, not
 * being deleted, and not yet labelled with a sandbox (a claimed pod keeps its pool label; the
 * labels: src/kubernetes/pod-spec.ts, POD_LABELS). One list of the pool's label selector. The
 * count of every warm-pool bench (`pool`, `claims`, `cpu`: tools/bench/cpu-operations.ts).
 * @throws what the list throws (the apiserver unreachable, or answering an error)
 */
export async function readyWarmPods(
  kubeConfig: KubeConfig,
  namespace: string,
  template: string,
): Promise<number> {
  const list = await kubeConfig.makeApiClient(CoreV1Api).listNamespacedPod({
    namespace,
    labelSelector: `${POD_LABELS.warmPool}=${template}`,
  });
  return list.items.filter(
    (p) =>
      p.status?.podIP &&
      !p.metadata?.deletionTimestamp &&
      !p.metadata?.labels?.[POD_LABELS.sandboxId],
  ).length;
}

/**
 * Resolves when the rig's pool holds `size` ready, unclaimed pods ({@link readyWarmPods}; a read
 * every 500 ms).
 * @throws Error after `timeoutMs` (a loaded machine fills 500 pods in about a minute)
 */
export async function untilPoolFull(
  rig: ProcessRig,
  size: number,
  timeoutMs = 900_000,
): Promise<void> {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(rig.cluster.kubeconfigYaml(WARM_NAMESPACE));
  await waitUntil(
    async () => (await readyWarmPods(kubeConfig, WARM_NAMESPACE, WARM_TEMPLATE)) >= size,
    {
      timeoutMs,
      intervalMs: 500,
      what: `${size} ready warm pods`,
    },
  );
}
