/**
 * Records the kubelet's `FailedCreatePodSandBox` Warning events on a pod the way kubelet's
 * legacy recorder does (client-go tools/record): a core/v1 Event named `<pod>.<unix nanoseconds
 * in hex>` with `source.component: kubelet`, `source.host`, `reportingComponent: kubelet` and
 * `reportingInstance` the node; a repeat of the same message PATCHes that event's `count` and
 * `lastTimestamp` (the recorder's `EventLogger` cache) instead of creating another one.
 */
import type { CoreV1Api, CoreV1Event } from '@kubernetes/client-node';
import { SANDBOX_FAILURE_REASON } from '../simulated-cluster/node-rules.js';

/** The pod an event is about. */
export interface InvolvedPod {
  namespace: string;
  name: string;
  uid: string;
  resourceVersion?: string;
}

interface Recorded {
  name: string;
  count: number;
}

/** Kubelet-shaped event recorder for one node. */
export class KubeletEventRecorder {
  /** (pod uid, message) -> the event recorded for it; dropped with the pod. */
  private readonly recorded = new Map<string, Map<string, Recorded>>();
  private lastNanos = 0n;

  constructor(
    private readonly core: CoreV1Api,
    private readonly nodeName: string,
  ) {}

  /**
   * Records one occurrence of a sandbox refusal: creates the event (count 1) or bumps the count
   * of the event recorded earlier with the same message.
   * @returns the event as the apiserver stored it
   * @throws the client's ApiException when the apiserver refuses the create or patch
   */
  async recordSandboxFailure(pod: InvolvedPod, message: string): Promise<CoreV1Event> {
    const byMessage = this.recorded.get(pod.uid) ?? new Map<string, Recorded>();
    this.recorded.set(pod.uid, byMessage);
    const now = new Date();
    const earlier = byMessage.get(message);
    if (earlier) {
      earlier.count += 1;
      return this.core.patchNamespacedEvent({
        name: earlier.name,
        namespace: pod.namespace,
        body: [
          { op: 'replace', path: '/count', value: earlier.count },
          { op: 'replace', path: '/lastTimestamp', value: kubeTime(now) },
        ],
      });
    }
    const name = `${pod.name}.${this.nextSuffix(now)}`;
    const created = await this.core.createNamespacedEvent({
      namespace: pod.namespace,
      body: {
        metadata: { name, namespace: pod.namespace },
        involvedObject: {
          kind: 'Pod',
          namespace: pod.namespace,
          name: pod.name,
          uid: pod.uid,
          apiVersion: 'v1',
          resourceVersion: pod.resourceVersion,
        },
        reason: SANDBOX_FAILURE_REASON,
        message,
        source: { component: 'kubelet', host: this.nodeName },
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
        type: 'Warning',
        reportingComponent: 'kubelet',
        reportingInstance: this.nodeName,
      },
    });
    byMessage.set(message, { name, count: 1 });
    return created;
  }

  /** Forgets the events of a pod that is gone. */
  forget(podUid: string): void {
    this.recorded.delete(podUid);
  }

  /** Unix nanoseconds in hex, kept increasing (two events in one millisecond stay distinct). */
  private nextSuffix(now: Date): string {
    const nanos = BigInt(now.getTime()) * 1_000_000n;
    this.lastNanos = nanos > this.lastNanos ? nanos : this.lastNanos + 1n;
    return this.lastNanos.toString(16);
  }
}

/** RFC 3339 with second resolution, as metav1.Time serializes. */
function kubeTime(at: Date): string {
  return at.toISOString().replace(/\.\d{3}Z$/, 'Z');
}
