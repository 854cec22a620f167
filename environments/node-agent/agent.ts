/**
 * The node agent: a kubelet stand-in for one node of a real apiserver, over
 * @kubernetes/client-node and the same API a kubelet uses. It applies the simulated node's rules
 * (simulated-cluster/node-rules.ts: which disks the runtime refuses, the rootfs sizes, the
 * start-up delay and refusal back-off) to real pods:
 *
 * - kubelet: registers the Node, renews its Lease, watches the pods bound to it
 *   (`spec.nodeName=<node>`, the selector the Node authorizer requires) and, after the start-up
 *   delay, either records the sandbox refusal as kubelet does (node-agent/event-recorder.ts),
 *   repeated with doubling back-off, or sets the pod Running with an IP through the `status`
 *   subresource;
 * - graceful deletion: a pod of its node that gets a `deletionTimestamp` is deleted with grace
 *   period 0 and a uid precondition, as kubelet's status manager does once the containers are
 *   gone (otherwise it would stay Terminating for ever).
 *
 * The binding is node-agent/scheduler.ts's (one scheduler for every node agent of a tier).
 * Tests script it like the simulated node (`refuseWith`, `neverReady`).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  CoreV1Api,
  ListWatch,
  Watch,
  type KubeConfig,
  type V1Pod,
  type V1PodList,
} from '@kubernetes/client-node';
import { httpStatusOf } from '../../src/kubernetes/client.js';
import {
  podIpFor,
  refusalBackoffMs,
  refusalEventMessage,
  refusalFor,
  runningPodStatus,
  sandboxFailureMessage,
  type ScriptedRefusal,
} from '../simulated-cluster/node-rules.js';
import { KubeletEventRecorder } from './event-recorder.js';
import { registerNode, type NodeRegistration } from './node-registration.js';

/**
 * How long the agent waits before it sends a failed pod status update or deletion again, in
 * ms (kubelet's status manager retries on its next sync, every 10 s; shorter here so a test's
 * wait through an apiserver restart stays short).
 */
export const STATUS_RETRY_MS = 1_000;

/** How to run a node agent. Durations in ms; defaults are the simulated node's. */
export interface NodeAgentOptions {
  /** Credentials of the kubelet role: `system:node:<nodeName>` in group `system:nodes`. */
  kubelet: KubeConfig;
  /** The node's name. */
  nodeName: string;
  /** The node's place among the tier's nodes (0-based): its pod IPs are 10.<244 + index>.x.y. */
  nodeIndex?: number;
  /** Template name -> rootfs size in MiB. Default `{ base: 451 }`. */
  rootfsMib?: Record<string, number>;
  /** Delay before the node acts on a new pod (IP or first refusal). Default 300. */
  startupDelayMs?: number;
  /** First back-off between repeated refusals, doubling. Default 1000. */
  refusalBackoffMs?: number;
  /** Cap of that back-off. Default 10000. */
  refusalBackoffMaxMs?: number;
  /** Called with an error the agent survives (a failed write, a dropped watch). Default: ignored. */
  onError?: (err: unknown, what: string) => void;
}

/** One pod the kubelet role is acting on. */
interface PodRun {
  uid: string;
  namespace: string;
  name: string;
  scripted: ScriptedRefusal | null;
  occurrences: number;
  timer?: NodeJS.Timeout;
}

/** A running node agent. Start with `NodeAgent.start()`, stop with `stop()`. */
export class NodeAgent {
  private readonly runs = new Map<string, PodRun>();
  private readonly finishing = new Set<string>();
  private readonly kubeletCore: CoreV1Api;
  private readonly recorder: KubeletEventRecorder;
  private readonly rootfsMib: Record<string, number>;
  private readonly startupDelayMs: number;
  private readonly backoffMs: number;
  private readonly backoffMaxMs: number;
  private readonly onError: (err: unknown, what: string) => void;
  private readonly informers: Array<ListWatch<V1Pod>> = [];
  private registration?: NodeRegistration;
  private scriptedRefusal: ScriptedRefusal | null = null;
  private neverReadyOn = false;
  private nextIp = 0;
  private stopped = false;

  private constructor(private readonly options: NodeAgentOptions) {
    this.kubeletCore = options.kubelet.makeApiClient(CoreV1Api);
    this.recorder = new KubeletEventRecorder(this.kubeletCore, options.nodeName);
    this.rootfsMib = options.rootfsMib ?? { base: 451 };
    this.startupDelayMs = options.startupDelayMs ?? 300;
    this.backoffMs = options.refusalBackoffMs ?? 1000;
    this.backoffMaxMs = options.refusalBackoffMaxMs ?? 10_000;
    this.onError = options.onError ?? (() => {});
  }

  /**
   * Registers the node and starts both informers; resolves once their first lists are in.
   * @throws the client's ApiException when the Node cannot be registered or a first list fails
   */
  static async start(options: NodeAgentOptions): Promise<NodeAgent> {
    const agent = new NodeAgent(options);
    try {
      agent.registration = await registerNode(options.kubelet, options.nodeName, (err) =>
        agent.onError(err, 'renewing the node lease'),
      );
      await agent.startInformers();
    } catch (err) {
      await agent.stop();
      throw err;
    }
    return agent;
  }

  /** The node's name. */
  get nodeName(): string {
    return this.options.nodeName;
  }

  /**
   * From now on the node refuses every new pod with this gRPC code and message instead of
   * deciding by disk (e.g. 'Unavailable', never decisive; 'ResourceExhausted', which a template
   * may re-place on); null restores the rules. Applies to pods the node sees while it is set (as `FaultScript.refuseWith` of the simulated cluster).
   */
  refuseWith(code: string | null, message = 'simulated refusal'): void {
    this.scriptedRefusal = code === null ? null : { code, message };
  }

  /** While true, the node does nothing for new pods (never ready, no events). */
  neverReady(on: boolean): void {
    this.neverReadyOn = on;
  }

  /** Stops the informers, the lease renewal and every pending action. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.registration?.stop();
    for (const run of this.runs.values()) clearTimeout(run.timer);
    this.runs.clear();
    await Promise.all(this.informers.map((informer) => informer.stop()));
  }

  private async startInformers(): Promise<void> {
    const { nodeName } = this.options;
    const bound = this.informer(
      this.options.kubelet,
      this.kubeletCore,
      `spec.nodeName=${nodeName}`,
      'watching the node’s pods',
    );
    bound.on('add', (pod) => this.onPod(pod));
    bound.on('update', (pod) => this.onPod(pod));
    bound.on('delete', (pod) => {
      this.forget(pod.metadata?.uid ?? '');
      this.finishing.delete(pod.metadata?.uid ?? '');
    });
    await bound.start();
  }

  /** A cluster-wide pod informer with a field selector, restarted after an error. */
  private informer(
    config: KubeConfig,
    core: CoreV1Api,
    fieldSelector: string,
    what: string,
  ): ListWatch<V1Pod> {
    const informer = new ListWatch<V1Pod>(
      '/api/v1/pods',
      new Watch(config),
      () => core.listPodForAllNamespaces({ fieldSelector }) as Promise<V1PodList>,
      false,
      undefined,
      fieldSelector,
    );
    informer.on('error', (err: unknown) => {
      if (this.stopped) return;
      this.onError(err, what);
      setTimeout(() => {
        if (!this.stopped) informer.start().catch((e: unknown) => this.onError(e, what));
      }, 1000).unref();
    });
    this.informers.push(informer);
    return informer;
  }

  /** The kubelet's reaction to a pod bound to this node (added or updated). */
  private onPod(pod: V1Pod): void {
    const { name, namespace, uid } = pod.metadata ?? {};
    if (!name || !namespace || !uid || this.stopped) return;
    if (pod.metadata?.deletionTimestamp) {
      void this.finishDeletion(namespace, name, uid);
      return;
    }
    const phase = pod.status?.phase;
    if (this.runs.has(uid) || pod.status?.podIP || phase === 'Failed' || phase === 'Succeeded') {
      return;
    }
    if (this.neverReadyOn) {
      this.runs.set(uid, { uid, namespace, name, scripted: null, occurrences: 0 });
      return;
    }
    const run: PodRun = { uid, namespace, name, scripted: this.scriptedRefusal, occurrences: 0 };
    this.runs.set(uid, run);
    run.timer = setTimeout(() => void this.act(run, pod), this.startupDelayMs);
  }

  /** After the start-up delay: refuse (and keep retrying) or run. */
  private async act(run: PodRun, pod: V1Pod): Promise<void> {
    run.timer = undefined;
    if (!this.isCurrent(run)) return;
    const refusal =
      run.scripted ??
      refusalFor(pod.metadata?.annotations ?? {}, this.rootfsMib, this.options.nodeName);
    if (refusal) await this.refuse(run, sandboxFailureMessage(refusal.code, refusal.message), pod);
    else await this.makeReady(run, pod);
  }

  private async refuse(run: PodRun, message: string, pod: V1Pod): Promise<void> {
    run.occurrences += 1;
    try {
      await this.recorder.recordSandboxFailure(
        {
          namespace: run.namespace,
          name: run.name,
          uid: run.uid,
          resourceVersion: pod.metadata?.resourceVersion,
        },
        refusalEventMessage(run.occurrences, message),
      );
    } catch (err) {
      if (this.isCurrent(run)) this.onError(err, `recording a refusal of pod ${run.name}`);
    }
    if (!this.isCurrent(run)) return;
    const delayMs = refusalBackoffMs(run.occurrences, this.backoffMs, this.backoffMaxMs);
    run.timer = setTimeout(() => {
      run.timer = undefined;
      if (this.isCurrent(run)) void this.refuse(run, message, pod);
    }, delayMs);
  }

  /**
   * Sets the pod Running with its IP. A conflict re-reads the pod at once; any other failure
   * but 404 (the apiserver restarting, refusing for a moment, throttling) is retried after
   * {@link STATUS_RETRY_MS}, as kubelet's status manager retries a failed status update on its
   * next sync (pkg/kubelet/status/status_manager.go, every 10 s there), until it lands or the
   * pod is gone or deleted.
   */
  private async makeReady(run: PodRun, pod: V1Pod): Promise<void> {
    const ip = podIpFor(this.nextIp++, this.options.nodeIndex ?? 0);
    let current: V1Pod | undefined = pod;
    while (this.isCurrent(run)) {
      try {
        current ??= await this.kubeletCore.readNamespacedPod({
          name: run.name,
          namespace: run.namespace,
        });
        if (current.metadata?.uid !== run.uid || current.metadata?.deletionTimestamp) return;
        const status = runningPodStatus(
          current.spec?.containers ?? [],
          ip,
          new Date().toISOString().replace(/\.\d{3}Z$/, 'Z'),
          () => `containerd://${randomBytes(32).toString('hex')}`,
        );
        await this.kubeletCore.replaceNamespacedPodStatus({
          name: run.name,
          namespace: run.namespace,
          body: { ...current, status: { ...current.status, ...status } as V1Pod['status'] },
        });
        this.runs.delete(run.uid);
        return;
      } catch (err) {
        current = undefined; // read it again before the next attempt
        const status = httpStatusOf(err);
        if (status === 404) return;
        if (status === 409) continue;
        this.onError(err, `setting pod ${run.name} running (retrying)`);
        await sleep(STATUS_RETRY_MS);
      }
    }
  }

  /** Kubelet's final step of a graceful deletion: delete with grace period 0, uid precondition. */
  private async finishDeletion(namespace: string, name: string, uid: string): Promise<void> {
    this.forget(uid);
    if (this.finishing.has(uid)) return;
    this.finishing.add(uid);
    try {
      await this.kubeletCore.deleteNamespacedPod({
        name,
        namespace,
        gracePeriodSeconds: 0,
        body: { gracePeriodSeconds: 0, preconditions: { uid } },
      });
    } catch (err) {
      if (httpStatusOf(err) !== 404 && httpStatusOf(err) !== 409) {
        this.onError(err, `finishing the deletion of pod ${name} (retrying)`);
        // Retried like a status update: a restarting apiserver must not leave the pod behind.
        setTimeout(() => {
          this.finishing.delete(uid);
          if (!this.stopped) void this.finishDeletion(namespace, name, uid);
        }, STATUS_RETRY_MS).unref();
      }
    }
  }

  private forget(uid: string): void {
    const run = this.runs.get(uid);
    if (run?.timer) clearTimeout(run.timer);
    this.runs.delete(uid);
    this.recorder.forget(uid);
  }

  private isCurrent(run: PodRun): boolean {
    return !this.stopped && this.runs.get(run.uid) === run;
  }
}
