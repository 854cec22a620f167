/**
 * The Kubernetes client keeps its connections: pod deletes, which carry a body (the uid
 * precondition), no longer make undici close the connection after each one
 * (src/kubernetes/body-keep-alive.ts). Counted by what the simulated apiserver accepted, not by
 * a clock; the TLS path against the real apiserver is in test/real-apiserver.test.ts.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { createKubernetesClient, type KubernetesClient } from '../src/kubernetes/client.js';
import { createPod, deletePod } from '../src/kubernetes/pods.js';

const NAMESPACE = 'sandboxes';
let cluster: SimulatedCluster;
let client: KubernetesClient;

beforeEach(async () => {
  cluster = await SimulatedCluster.start({ startupDelayMs: 100 });
  client = createKubernetesClient({
    kubeconfigYaml: cluster.kubeconfigYaml(),
    namespace: NAMESPACE,
  });
});
afterEach(async () => {
  await cluster.close();
});

function input(n: number) {
  return {
    sandboxId: `sbx_conn${String(n).padStart(16, '0')}`,
    generation: 1,
    template: 'base',
    image: 'example/base:1',
    resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
  };
}

describe('pod deletes with a uid precondition', () => {
  it('reuse the pool connection: 20 creates and 20 deletes over at most 2 connections', async () => {
    const pods = [];
    for (let n = 0; n < 20; n++) pods.push(await createPod(client, input(n)));
    for (const pod of pods) expect(await deletePod(client, pod)).toBe('deleted');
    // Each delete still sent its precondition in the body, and the apiserver read it.
    const deletes = cluster.requestsWhere({ verb: 'delete', resource: 'pods' });
    expect(deletes).toHaveLength(20);
    for (const [i, request] of deletes.entries()) {
      expect(request.deleteOptions).toMatchObject({ preconditions: { uid: pods[i]!.uid } });
    }
    // A request after them reads its own answer on the kept connection.
    const after = await client.core.listNamespacedPod({ namespace: NAMESPACE });
    expect(after.items.every((pod) => pod.metadata?.deletionTimestamp)).toBe(true);
    expect(cluster.connectionsAccepted).toBeLessThanOrEqual(2);
  });
});
