/**
 * Several nodes in the simulated cluster (docs/architecture.md, "The simulated cluster"): the
 * scheduler honours required node affinity on `kubernetes.io/hostname`, a pod no node fits
 * stays Pending as Unschedulable, and one node can be scripted to refuse. Over HTTP through
 * @kubernetes/client-node, as the service talks to it.
 */
import { CoreV1Api, KubeConfig, type V1Pod } from '@kubernetes/client-node';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { nodeAffinityAllows, pickNode } from '../environments/simulated-cluster/scheduling.js';

const NS = 'sandboxes';
const NODES = ['node-a', 'node-b', 'node-c'];
const WAIT = { timeout: 15_000, interval: 20 };

let cluster: SimulatedCluster | undefined;

afterEach(async () => {
  await cluster?.close();
  cluster = undefined;
});

async function start() {
  cluster = await SimulatedCluster.start({ nodeNames: NODES, startupDelayMs: 50 });
  const kc = new KubeConfig();
  kc.loadFromString(cluster.kubeconfigYaml());
  return { sim: cluster, core: kc.makeApiClient(CoreV1Api) };
}

function pod(name: string, notIn: string[] = []): V1Pod {
  return {
    metadata: {
      name,
      annotations: {
        'durable-sandbox.dev/template': 'base',
        'durable-sandbox.dev/disk-mib': '2048',
      },
    },
    spec: {
      containers: [{ name: 'sandbox', image: 'ghcr.io/durable-sandbox/base:1' }],
      ...(notIn.length > 0
        ? {
            affinity: {
              nodeAffinity: {
                requiredDuringSchedulingIgnoredDuringExecution: {
                  nodeSelectorTerms: [
                    {
                      matchExpressions: [
                        { key: 'kubernetes.io/hostname', operator: 'NotIn', values: notIn },
                      ],
                    },
                  ],
                },
              },
            },
          }
        : {}),
    },
  };
}

describe('simulated cluster with several nodes', () => {
  it('binds a pod to the first node its NotIn affinity allows, and that node runs it', async () => {
    const { core } = await start();
    await core.createNamespacedPod({ namespace: NS, body: pod('free') });
    await core.createNamespacedPod({ namespace: NS, body: pod('not-a-b', ['node-a', 'node-b']) });
    const free = await core.readNamespacedPod({ namespace: NS, name: 'free' });
    expect(free.spec?.nodeName).toBe('node-a');
    await vi.waitFor(async () => {
      const moved = await core.readNamespacedPod({ namespace: NS, name: 'not-a-b' });
      expect(moved.spec?.nodeName).toBe('node-c');
      expect(moved.status?.podIP).toMatch(/^10\.246\./); // node-c's pod range
    }, WAIT);
  });

  it('leaves a pod no node fits Pending as Unschedulable with a FailedScheduling event', async () => {
    const { core } = await start();
    await core.createNamespacedPod({ namespace: NS, body: pod('nowhere', NODES) });
    const stuck = await core.readNamespacedPod({ namespace: NS, name: 'nowhere' });
    expect(stuck.spec?.nodeName).toBeUndefined();
    expect(stuck.status?.conditions).toEqual([
      expect.objectContaining({
        type: 'PodScheduled',
        status: 'False',
        reason: 'Unschedulable',
        message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.",
      }),
    ]);
    const events = await core.listNamespacedEvent({ namespace: NS });
    expect(events.items).toEqual([
      expect.objectContaining({
        reason: 'FailedScheduling',
        type: 'Warning',
        involvedObject: expect.objectContaining({ uid: stuck.metadata?.uid }),
      }),
    ]);
  });

  it('refuses only on the node scripted to refuse, with its code as a kubelet event', async () => {
    const { sim, core } = await start();
    sim.faults.refuseOnNode('node-a', 'ResourceExhausted', 'no sandbox capacity left');
    await core.createNamespacedPod({ namespace: NS, body: pod('on-a') });
    await core.createNamespacedPod({ namespace: NS, body: pod('on-b', ['node-a']) });
    await vi.waitFor(async () => {
      const events = await core.listNamespacedEvent({
        namespace: NS,
        fieldSelector: 'reason=FailedCreatePodSandBox',
      });
      expect(events.items.map((e) => [e.involvedObject.name, e.source?.host, e.message])).toEqual([
        [
          'on-a',
          'node-a',
          'Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=ResourceExhausted] no sandbox capacity left',
        ],
      ]);
      const onB = await core.readNamespacedPod({ namespace: NS, name: 'on-b' });
      expect(onB.status?.podIP).toBeTruthy();
    }, WAIT);
  });
});

describe('scheduling rules', () => {
  const notIn = (values: string[]) => pod('x', values).spec;

  it('reads In, NotIn, Exists and DoesNotExist on the hostname label', () => {
    const labels = { 'kubernetes.io/hostname': 'node-b' };
    expect(nodeAffinityAllows(notIn(['node-a']), labels)).toBe(true);
    expect(nodeAffinityAllows(notIn(['node-b']), labels)).toBe(false);
    const term = (operator: string, values?: string[]) => ({
      affinity: {
        nodeAffinity: {
          requiredDuringSchedulingIgnoredDuringExecution: {
            nodeSelectorTerms: [
              { matchExpressions: [{ key: 'kubernetes.io/hostname', operator, values }] },
            ],
          },
        },
      },
    });
    expect(nodeAffinityAllows(term('In', ['node-b']), labels)).toBe(true);
    expect(nodeAffinityAllows(term('In', ['node-a']), labels)).toBe(false);
    expect(nodeAffinityAllows(term('Exists'), labels)).toBe(true);
    expect(nodeAffinityAllows(term('DoesNotExist'), labels)).toBe(false);
    expect(nodeAffinityAllows(term('Gt', ['1']), labels)).toBe(false);
  });

  it('picks the first allowed node in order, none when all are excluded', () => {
    expect(pickNode(undefined, NODES)).toBe('node-a');
    expect(pickNode(notIn(['node-a']), NODES)).toBe('node-b');
    expect(pickNode(notIn(NODES), NODES)).toBeUndefined();
  });
});
