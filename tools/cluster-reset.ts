/**
 * What the embedded stack (`npm start` on its own cluster) says about the pods of before a
 * restart: its cluster (the simulated cluster, or `CLUSTER=real`'s apiserver tier, whose etcd
 * is temporary) starts empty, so every pod it held is gone although nothing deleted it. A
 * sandbox that was running is marked `lost` with {@link clusterResetReason}; a create that was
 * waiting for its pod's IP fails saying the same ({@link explainPodsOfBefore}), while a pod made
 * after the restart that goes missing still says it was deleted.
 */
import type { SandboxInformersOptions } from '../src/kubernetes/sandbox-informers.js';
import type { Store } from '../src/store/index.js';

/** Why the pods of before are gone: `the embedded stack restarted with an empty …`. */
export function clusterResetReason(real: boolean): string {
  return `the embedded stack restarted with an empty ${real ? 'apiserver tier' : 'simulated cluster'}`;
}

/**
 * The worker's `explainMissingPod` for a stack that just started on an empty cluster: the pods
 * the store records for sandboxes still `creating` now (read once, before the worker runs; at
 * most 10,000) are the ones the restart took, and say `<reason> (nothing deleted it)`; any
 * other pod that goes missing was deleted (undefined: the informers' default).
 * @throws the store's error when it cannot be read
 */
export async function explainPodsOfBefore(
  store: Pick<Store, 'listCreatingPodUids'>,
  reason: string,
): Promise<NonNullable<SandboxInformersOptions['explainMissingPod']>> {
  const ofBefore = new Set(await store.listCreatingPodUids());
  return (pod) => (ofBefore.has(pod.uid) ? `${reason} (nothing deleted it)` : undefined);
}
