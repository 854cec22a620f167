/**
 * The simulated cluster's scheduler: binds every new pod without a `spec.nodeName` to the first
 * node its required node affinity allows (simulated-cluster/scheduling.ts), at once, in process.
 * When no node fits, it does what kube-scheduler does: the pod stays Pending with condition
 * `PodScheduled=False`, reason `Unschedulable` and the scheduler's message, and a
 * `FailedScheduling` Warning event from `default-scheduler` is recorded on it.
 */
import {
  FAILED_SCHEDULING_REASON,
  UNSCHEDULABLE_REASON,
  pickNode,
  unschedulableMessage,
  type AffinitySpecLike,
} from './scheduling.js';
import { kubeTime, type Change, type KubeObject, type ObjectStore } from './store.js';

type Json = Record<string, unknown>;

/** Binds new pods to the cluster's nodes. */
export class SimulatedScheduler {
  private readonly unsubscribe: () => void;
  private eventSequence = 0;

  /** @param nodeNames the cluster's nodes, in the order the scheduler tries them */
  constructor(
    private readonly store: ObjectStore,
    private readonly nodeNames: readonly string[],
  ) {
    this.unsubscribe = store.onChange((change) => this.onChange(change));
  }

  /** Stops reacting to the store. */
  stop(): void {
    this.unsubscribe();
  }

  private onChange(change: Change): void {
    if (change.resource !== 'pods' || change.type !== 'ADDED') return;
    const pod = change.object;
    const spec = (pod.spec ?? {}) as Json;
    if (typeof spec.nodeName === 'string' && spec.nodeName !== '') return;
    const node = pickNode(spec as AffinitySpecLike, this.nodeNames);
    const { namespace, name } = pod.metadata;
    const now = kubeTime();
    if (node === undefined) {
      const message = unschedulableMessage(this.nodeNames.length);
      this.store.update('pods', namespace, name, (next) => {
        next.status = {
          ...((next.status as Json | undefined) ?? {}),
          phase: 'Pending',
          conditions: [
            {
              type: 'PodScheduled',
              status: 'False',
              reason: UNSCHEDULABLE_REASON,
              message,
              lastProbeTime: null,
              lastTransitionTime: now,
            },
          ],
        };
      });
      this.recordFailedScheduling(pod, message, now);
      return;
    }
    this.store.update('pods', namespace, name, (next) => {
      next.spec = { ...((next.spec as Json | undefined) ?? {}), nodeName: node };
      next.status = {
        ...((next.status as Json | undefined) ?? {}),
        conditions: [
          { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now },
        ],
      };
    });
  }

  private recordFailedScheduling(pod: KubeObject, message: string, now: string): void {
    const { namespace, name, uid, resourceVersion } = pod.metadata;
    this.eventSequence += 1;
    this.store.create('events', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: {
        name: `${name}.s${Date.now().toString(16)}${this.eventSequence}`,
        namespace,
        uid: '',
        resourceVersion: '',
        creationTimestamp: '',
      },
      involvedObject: { kind: 'Pod', namespace, name, uid, apiVersion: 'v1', resourceVersion },
      reason: FAILED_SCHEDULING_REASON,
      message,
      source: { component: 'default-scheduler' },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type: 'Warning',
      eventTime: null,
      reportingComponent: 'default-scheduler',
      reportingInstance: 'default-scheduler',
    });
  }
}
