/**
 * Registers the agent's Node and keeps it alive as kubelet does: the Node object with a Ready
 * condition and capacity (created once, status through the `status` subresource), and its Lease
 * in `kube-node-lease` renewed every 10 s (kubelet's default `nodeLeaseDurationSeconds` is 40,
 * renewed at a quarter of it).
 */
import {
  CoordinationV1Api,
  CoreV1Api,
  type KubeConfig,
  type V1Lease,
  type V1Node,
} from '@kubernetes/client-node';
import { httpStatusOf } from '../../src/kubernetes/client.js';
import { NODE_HOST_IP } from '../simulated-cluster/node-rules.js';

/** Lease duration (s) and renewal interval (ms). */
export const LEASE_DURATION_SECONDS = 40;
export const LEASE_RENEW_INTERVAL_MS = 10_000;

/** A registered node; `stop()` ends the lease renewal. */
export interface NodeRegistration {
  stop(): void;
}

/**
 * Creates (or reuses) the Node, sets its Ready status, and starts renewing its Lease.
 * @param kubelet a KubeConfig for `system:node:<nodeName>` (or any user allowed the same)
 * @param onError called with a failed lease renewal (the next one is tried anyway)
 * @throws the client's ApiException when the Node or its status cannot be written
 */
export async function registerNode(
  kubelet: KubeConfig,
  nodeName: string,
  onError: (err: unknown) => void,
): Promise<NodeRegistration> {
  const core = kubelet.makeApiClient(CoreV1Api);
  const coordination = kubelet.makeApiClient(CoordinationV1Api);
  let node: V1Node;
  try {
    node = await core.createNode({
      body: {
        metadata: {
          name: nodeName,
          labels: {
            'kubernetes.io/hostname': nodeName,
            'kubernetes.io/os': 'linux',
            'kubernetes.io/arch': 'amd64',
            'durable-sandbox.dev/node-agent': 'true',
          },
        },
      },
    });
  } catch (err) {
    if (httpStatusOf(err) !== 409) throw err;
    node = await core.readNode({ name: nodeName });
  }
  const now = new Date();
  const capacity = { cpu: '8', memory: '32Gi', pods: '110', 'ephemeral-storage': '100Gi' };
  await core.replaceNodeStatus({
    name: nodeName,
    body: {
      ...node,
      status: {
        capacity,
        allocatable: capacity,
        addresses: [
          { type: 'InternalIP', address: NODE_HOST_IP },
          { type: 'Hostname', address: nodeName },
        ],
        conditions: [
          {
            type: 'Ready',
            status: 'True',
            reason: 'KubeletReady',
            message: 'durable-sandbox node agent is posting ready status',
            lastHeartbeatTime: now,
            lastTransitionTime: now,
          },
        ],
        nodeInfo: {
          architecture: 'amd64',
          bootID: '',
          containerRuntimeVersion: 'durable-sandbox-node-agent://1',
          kernelVersion: '',
          kubeProxyVersion: '',
          kubeletVersion: 'v1.34.12',
          machineID: '',
          operatingSystem: 'linux',
          osImage: 'durable-sandbox node agent',
          systemUUID: '',
        },
      },
    },
  });

  let lease: V1Lease | undefined;
  const renew = async () => {
    const renewTime = microTime(new Date());
    if (!lease) {
      try {
        lease = await coordination.createNamespacedLease({
          namespace: 'kube-node-lease',
          body: {
            metadata: { name: nodeName, namespace: 'kube-node-lease' },
            spec: {
              holderIdentity: nodeName,
              leaseDurationSeconds: LEASE_DURATION_SECONDS,
              renewTime,
            },
          },
        });
        return;
      } catch (err) {
        if (httpStatusOf(err) !== 409) throw err;
        lease = await coordination.readNamespacedLease({
          name: nodeName,
          namespace: 'kube-node-lease',
        });
      }
    }
    lease = await coordination.replaceNamespacedLease({
      name: nodeName,
      namespace: 'kube-node-lease',
      body: { ...lease, spec: { ...lease.spec, holderIdentity: nodeName, renewTime } },
    });
  };
  const renewSafely = () =>
    renew().catch((err: unknown) => {
      lease = undefined; // read it afresh next time (e.g. after a 409 on a stale version)
      onError(err);
    });
  await renewSafely();
  const timer = setInterval(() => void renewSafely(), LEASE_RENEW_INTERVAL_MS);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}

/**
 * `metav1.MicroTime` as the apiserver parses it (six fractional digits). client-node types the
 * field as a Date but sends a Date with milliseconds, which the apiserver refuses (400 "cannot
 * parse .123Z as .000000"); a string passes through its serializer unchanged.
 */
function microTime(at: Date): Date {
  return at.toISOString().replace(/Z$/, '000Z') as unknown as Date;
}
