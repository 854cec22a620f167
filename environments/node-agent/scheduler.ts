/**
 * The scheduler stand-in of the real apiserver tier: binds every unscheduled pod to the first of
 * the tier's nodes its required node affinity allows (simulated-cluster/scheduling.ts, the rules
 * the simulated cluster's scheduler uses), through `pods/binding` as `system:kube-scheduler`.
 * When no node fits it does what kube-scheduler does: the pod's `PodScheduled` condition turns
 * `False` with reason `Unschedulable` and the scheduler's message (the `status` subresource), and
 * a `FailedScheduling` Warning from `default-scheduler` is recorded on it.
 */
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
  FAILED_SCHEDULING_REASON,
  UNSCHEDULABLE_REASON,
  pickNode,
  unschedulableMessage,
} from '../simulated-cluster/scheduling.js';

/** How to run the scheduler. */
export interface PodSchedulerOptions {
  /** Credentials of `system:kube-scheduler` (bind pods, write pod status, record events). */
  scheduler: KubeConfig;
  /** The nodes, in the order they are tried. */
  nodeNames: readonly string[];
  /** Called with an error the scheduler survives. Default: ignored. */
  onError?: (err: unknown, what: string) => void;
}

/** Pods the scheduler looks at: not bound, not finished (as kube-scheduler's own informer). */
const UNSCHEDULED = 'spec.nodeName=,status.phase!=Succeeded,status.phase!=Failed';
/** How long before a failed binding is tried again, in ms (kube-scheduler's first pod back-off, 1 s). */
const BIND_RETRY_MS = 1_000;

/** A running scheduler. Start with `PodScheduler.start()`, stop with `stop()`. */
export class PodScheduler {
  private readonly core: CoreV1Api;
  private readonly informer: ListWatch<V1Pod>;
  private readonly onError: (err: unknown, what: string) => void;
  /** Uids already found unschedulable (each is marked once, like kube-scheduler's first try). */
  private readonly unschedulable = new Set<string>();
  private stopped = false;

  private constructor(private readonly options: PodSchedulerOptions) {
    this.core = options.scheduler.makeApiClient(CoreV1Api);
    this.onError = options.onError ?? (() => {});
    this.informer = new ListWatch<V1Pod>(
      '/api/v1/pods',
      new Watch(options.scheduler),
      () => this.core.listPodForAllNamespaces({ fieldSelector: UNSCHEDULED }) as Promise<V1PodList>,
      false,
      undefined,
      UNSCHEDULED,
    );
    this.informer.on('add', (pod) => void this.schedule(pod));
    this.informer.on('error', (err: unknown) => {
      if (this.stopped) return;
      this.onError(err, 'watching unscheduled pods');
      setTimeout(() => {
        if (!this.stopped) {
          this.informer.start().catch((e: unknown) => this.onError(e, 'listing unscheduled pods'));
        }
      }, 1000).unref();
    });
  }

  /**
   * Starts watching unscheduled pods; resolves once the first list is in.
   * @throws the client's ApiException when the first list fails
   */
  static async start(options: PodSchedulerOptions): Promise<PodScheduler> {
    const scheduler = new PodScheduler(options);
    await scheduler.informer.start();
    return scheduler;
  }

  /** Stops the informer. Idempotent. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }

  private async schedule(pod: V1Pod): Promise<void> {
    const { name, namespace, uid } = pod.metadata ?? {};
    if (!name || !namespace || !uid || pod.metadata?.deletionTimestamp || this.stopped) return;
    const node = pickNode(pod.spec, this.options.nodeNames);
    if (node === undefined) {
      if (this.unschedulable.has(uid)) return;
      this.unschedulable.add(uid);
      await this.markUnschedulable(pod, name, namespace, uid);
      return;
    }
    try {
      await this.core.createNamespacedPodBinding({
        name,
        namespace,
        body: {
          metadata: { name, namespace, uid },
          target: { apiVersion: 'v1', kind: 'Node', name: node },
        },
      });
    } catch (err) {
      // 409: already bound; 404: deleted meanwhile.
      const status = httpStatusOf(err);
      if (status === 409 || status === 404) return;
      // Anything else (a restarting or briefly refusing apiserver) is tried again after 1 s, as
      // kube-scheduler puts a pod whose binding failed back in its back-off queue (1 s first).
      this.onError(err, `binding pod ${name} (retrying)`);
      setTimeout(() => {
        if (!this.stopped) void this.schedule(pod);
      }, BIND_RETRY_MS).unref();
    }
  }

  private async markUnschedulable(
    pod: V1Pod,
    name: string,
    namespace: string,
    uid: string,
  ): Promise<void> {
    const message = unschedulableMessage(this.options.nodeNames.length);
    const now = new Date();
    try {
      const current = await this.core.readNamespacedPod({ name, namespace });
      if (current.metadata?.uid !== uid) return;
      const others = (current.status?.conditions ?? []).filter((c) => c.type !== 'PodScheduled');
      await this.core.replaceNamespacedPodStatus({
        name,
        namespace,
        body: {
          ...current,
          status: {
            ...current.status,
            conditions: [
              ...others,
              {
                type: 'PodScheduled',
                status: 'False',
                reason: UNSCHEDULABLE_REASON,
                message,
                lastTransitionTime: now,
              },
            ],
          },
        },
      });
      await this.core.createNamespacedEvent({
        namespace,
        body: {
          metadata: { name: `${name}.${(Date.now() * 1_000_000).toString(16)}`, namespace },
          involvedObject: {
            kind: 'Pod',
            apiVersion: 'v1',
            namespace,
            name,
            uid,
            resourceVersion: pod.metadata?.resourceVersion,
          },
          reason: FAILED_SCHEDULING_REASON,
          message,
          type: 'Warning',
          source: { component: 'default-scheduler' },
          reportingComponent: 'default-scheduler',
          reportingInstance: 'default-scheduler',
          firstTimestamp: now,
          lastTimestamp: now,
          count: 1,
        },
      });
    } catch (err) {
      if (httpStatusOf(err) !== 404) this.onError(err, `marking pod ${name} unschedulable`);
    }
  }
}
