/**
 * One simulated node: kubelet and the runtime shim in one. It reacts to pods bound to its node
 * in the store (in process, not over HTTP; the binding is simulated-cluster/scheduler.ts's),
 * and after a start-up delay either refuses the sandbox with kubelet-shaped
 * `FailedCreatePodSandBox` Warning events, repeated with back-off and aggregation, or gives
 * the pod an IP (docs/architecture.md, "The simulated cluster").
 */
import { randomBytes } from 'node:crypto';
import type { Faults, ScriptedRefusal } from './faults.js';
import {
  SANDBOX_FAILURE_REASON,
  podIpFor,
  refusalBackoffMs,
  refusalEventMessage,
  refusalFor,
  runningPodStatus,
  sandboxFailureMessage,
} from './node-rules.js';
import { kubeTime, type Change, type KubeObject, type ObjectStore } from './store.js';

export {
  COMBINED_PREFIX,
  DISK_ANNOTATION,
  OCCURRENCES_BEFORE_AGGREGATION,
  SANDBOX_FAILURE_REASON,
  TEMPLATE_ANNOTATION,
  sandboxFailureMessage,
} from './node-rules.js';

/** Direct access to the node for tests. */
export interface SimulatedNode {
  /**
   * Records a kubelet-shaped FailedCreatePodSandBox Warning event on the pod now: count 1, or
   * bumps `count` (a MODIFIED) when the pod already has such an event with the same message.
   * @returns the event as stored (apiVersion v1, kind Event)
   * @throws ApiError 404 NotFound when the pod does not exist
   */
  recordSandboxFailure(namespace: string, podName: string, message: string): unknown;
  /**
   * Gives the pod an IP now (phase Running, Ready condition, running containers) and stops
   * its refusal loop.
   * @throws ApiError 404 NotFound when the pod does not exist
   */
  makeReady(namespace: string, podName: string): void;
  /**
   * Sets the pod's phase to Failed with `status.reason` = reason and stops its refusal loop.
   * @throws ApiError 404 NotFound when the pod does not exist
   */
  failPod(namespace: string, podName: string, reason: string): void;
  /**
   * Gives the pod an IP and a `metadata.deletionTimestamp` in one update: a graceful deletion
   * in progress, as a MODIFIED frame (or a re-list) shows it while the containers stop.
   * @throws ApiError 404 NotFound when the pod does not exist
   */
  markTerminating(namespace: string, podName: string): void;
}

/** Node configuration (see SimulatedClusterOptions for the defaults). */
export interface NodeOptions {
  nodeName: string;
  /** The node's place in the cluster (0-based): its pod IPs are 10.<244 + index>.x.y. */
  nodeIndex: number;
  /** template name -> rootfs size in MiB */
  rootfsMib: Record<string, number>;
  startupDelayMs: number;
  refusalBackoffMs: number;
  refusalBackoffMaxMs: number;
}

interface PodRun {
  uid: string;
  namespace: string;
  name: string;
  timer?: NodeJS.Timeout;
  /** Set when the pod is bound while refuseWith (or refuseOnNode for this node) is in effect. */
  scripted: ScriptedRefusal | null;
  occurrences: number;
}

type Json = Record<string, unknown>;

/** Kubelet + runtime shim for one node. */
export class SimulatedKubelet implements SimulatedNode {
  private readonly runs = new Map<string, PodRun>();
  /** Uids of the pods this node has admitted (each is acted on once). */
  private readonly admitted = new Set<string>();
  private readonly unsubscribe: () => void;
  private nextIp = 0;
  private eventSequence = 0n;
  /** Pod uid -> message -> the name of this node's event that says it (dropped with the pod). */
  private readonly failureEvents = new Map<string, Map<string, string>>();
  private stopped = false;

  constructor(
    private readonly store: ObjectStore,
    private readonly faults: Faults,
    private readonly options: NodeOptions,
  ) {
    this.unsubscribe = store.onChange((change) => this.onChange(change));
  }

  recordSandboxFailure(namespace: string, podName: string, message: string): unknown {
    const pod = this.store.get('pods', namespace, podName);
    // Like kubelet's event correlator, a repeat of this node's own event (same pod uid, reason
    // and message) bumps its count; found by the name it was created under, not by a scan of
    // every event of the namespace.
    const ofPod = this.failureEvents.get(pod.metadata.uid) ?? new Map<string, string>();
    const existingName = ofPod.get(message);
    const existing = existingName && this.store.find('events', namespace, existingName);
    const now = kubeTime();
    if (existing) {
      return this.store.update('events', namespace, existing.metadata.name, (event) => {
        event.count = (Number(event.count) || 1) + 1;
        event.lastTimestamp = now;
      });
    }
    const created = this.createFailureEvent(namespace, podName, pod, message, now);
    this.failureEvents.set(pod.metadata.uid, ofPod.set(message, created.metadata.name));
    return created;
  }

  private createFailureEvent(
    namespace: string,
    podName: string,
    pod: KubeObject,
    message: string,
    now: string,
  ): KubeObject {
    return this.store.create('events', {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: {
        name: `${podName}.${this.eventSuffix()}`,
        namespace,
        uid: '',
        resourceVersion: '',
        creationTimestamp: '',
      },
      involvedObject: {
        kind: 'Pod',
        namespace,
        name: podName,
        uid: pod.metadata.uid,
        apiVersion: 'v1',
        resourceVersion: pod.metadata.resourceVersion,
      },
      reason: SANDBOX_FAILURE_REASON,
      message,
      source: { component: 'kubelet', host: this.options.nodeName },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type: 'Warning',
      eventTime: null,
      reportingComponent: 'kubelet',
      reportingInstance: this.options.nodeName,
    });
  }

  makeReady(namespace: string, podName: string, also?: (next: KubeObject) => void): void {
    const pod = this.store.get('pods', namespace, podName);
    this.stopRun(pod.metadata.uid);
    const now = kubeTime();
    const ip = (pod.status as Json | undefined)?.podIP ?? this.allocateIp();
    this.store.update('pods', namespace, podName, (next) => {
      const spec = (next.spec ?? {}) as Json;
      spec.nodeName ??= this.options.nodeName;
      next.spec = spec;
      const containers = Array.isArray(spec.containers) ? (spec.containers as Json[]) : [];
      next.status = {
        ...((next.status as Json | undefined) ?? {}),
        ...runningPodStatus(
          containers,
          String(ip),
          now,
          () => `containerd://${randomBytes(32).toString('hex')}`,
        ),
      };
      also?.(next);
    });
  }

  markTerminating(namespace: string, podName: string): void {
    this.makeReady(namespace, podName, (next) => {
      next.metadata.deletionTimestamp = kubeTime();
      next.metadata.deletionGracePeriodSeconds = 30;
    });
  }

  failPod(namespace: string, podName: string, reason: string): void {
    const pod = this.store.get('pods', namespace, podName);
    this.stopRun(pod.metadata.uid);
    this.store.update('pods', namespace, podName, (next) => {
      const status = (next.status as Json | undefined) ?? {};
      next.status = {
        ...status,
        phase: 'Failed',
        reason,
        message: `Pod failed: ${reason}`,
        conditions: [
          {
            type: 'Ready',
            status: 'False',
            reason: 'PodFailed',
            lastProbeTime: null,
            lastTransitionTime: kubeTime(),
          },
        ],
      };
    });
  }

  /** Clears every timer and stops reacting to the store. */
  stop(): void {
    this.stopped = true;
    this.unsubscribe();
    for (const uid of [...this.runs.keys()]) this.stopRun(uid);
  }

  private onChange(change: Change): void {
    if (change.resource !== 'pods' || this.stopped) return;
    const { uid } = change.object.metadata;
    if (change.type === 'DELETED') {
      this.stopRun(uid);
      this.admitted.delete(uid);
      this.failureEvents.delete(uid);
      return;
    }
    const nodeName = (change.object.spec as Json | undefined)?.nodeName;
    if (nodeName !== this.options.nodeName || this.admitted.has(uid)) return;
    this.admitted.add(uid);
    this.admit(change.object);
  }

  /** Schedules the kubelet's first action on a pod just bound to this node. */
  private admit(pod: KubeObject): void {
    const { namespace, name, uid } = pod.metadata;
    if (this.faults.neverReadyEnabled) return;
    const scripted = this.faults.refusalOn(this.options.nodeName);
    const run: PodRun = { uid, namespace, name, scripted, occurrences: 0 };
    this.runs.set(uid, run);
    run.timer = setTimeout(() => this.act(run, pod), this.options.startupDelayMs);
  }

  /** The kubelet's decision after the start-up delay: refuse (and keep retrying) or run. */
  private act(run: PodRun, pod: KubeObject): void {
    run.timer = undefined;
    if (!this.isCurrent(run)) return;
    const refusal =
      run.scripted ??
      refusalFor(pod.metadata.annotations ?? {}, this.options.rootfsMib, this.options.nodeName);
    if (refusal) this.refuse(run, sandboxFailureMessage(refusal.code, refusal.message));
    else this.makeReady(run.namespace, run.name);
  }

  /** Records one refusal occurrence and schedules the next with doubling, capped back-off. */
  private refuse(run: PodRun, message: string): void {
    run.occurrences += 1;
    this.recordSandboxFailure(
      run.namespace,
      run.name,
      refusalEventMessage(run.occurrences, message),
    );
    const delay = refusalBackoffMs(
      run.occurrences,
      this.options.refusalBackoffMs,
      this.options.refusalBackoffMaxMs,
    );
    run.timer = setTimeout(() => {
      run.timer = undefined;
      if (this.isCurrent(run)) this.refuse(run, message);
    }, delay);
  }

  private isCurrent(run: PodRun): boolean {
    if (this.stopped || this.runs.get(run.uid) !== run) return false;
    return this.store.find('pods', run.namespace, run.name)?.metadata.uid === run.uid;
  }

  private stopRun(uid: string): void {
    const run = this.runs.get(uid);
    if (!run) return;
    if (run.timer) clearTimeout(run.timer);
    this.runs.delete(uid);
  }

  private allocateIp(): string {
    return podIpFor(this.nextIp++, this.options.nodeIndex);
  }

  /** Kubelet names events `<object>.<unix nanoseconds in hex>`; kept unique and increasing. */
  private eventSuffix(): string {
    const nanos = BigInt(Date.now()) * 1_000_000n;
    this.eventSequence = nanos > this.eventSequence ? nanos : this.eventSequence + 1n;
    return this.eventSequence.toString(16);
  }
}
