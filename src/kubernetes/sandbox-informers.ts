/**
 * One pods informer and one events informer per worker process (docs/architecture.md, "The
 * readiness watch"): every readiness wait of the worker reads their caches, and the worker's
 * decider (src/verdict/readiness-decider.ts) is told of every change, so the apiserver sees two
 * watches per worker however many creates wait.
 *
 * Built on client-node's `ListWatch` (list, then watch from the list's resourceVersion, resume
 * from the last version seen, re-list after 410, a cache of the objects). What it lacks is
 * added here, and only that:
 * - the watch request (bookmarks, a server-side timeout, refusals that keep their status and
 *   Retry-After): src/kubernetes/informer-watch.ts;
 * - a restart policy and jitter on ListWatch's own re-open delay: src/kubernetes/kept-informer.ts;
 * - a bounded events cache: ListWatch has no eviction, so events nobody can need are removed
 *   from its cache here (see {@link SandboxInformers.evictEvents}).
 */
import {
  ADD,
  DELETE,
  deleteObject,
  UPDATE,
  type CoreV1Event,
  type V1Pod,
} from '@kubernetes/client-node';
import { httpStatusOf, type KubernetesClient } from './client.js';
import { KeptInformer } from './kept-informer.js';
import { POD_LABELS } from './pod-spec.js';
import { FAILED_SANDBOX_EVENT } from './sandbox-events.js';
import type { InformerResource } from './watch-policy.js';

/** Structured logger subset (pino-compatible). */
export interface InformerLogger {
  info?(fields: Record<string, unknown>, message: string): void;
  warn(fields: Record<string, unknown>, message: string): void;
  error?(fields: Record<string, unknown>, message: string): void;
}

/** Hooks for metrics; all optional. */
export interface WatchObserver {
  /** A watch request is about to be sent, with why (`initial`, `ended`, `timeout`, `status-N`, …). */
  onWatchOpen?(resource: InformerResource, cause: string): void;
  /** A watch stream was established (`open` true) or has closed (`open` false). */
  onWatchStream?(resource: InformerResource, open: boolean): void;
  /** A list request is about to be sent. */
  onList?(resource: InformerResource): void;
}

/** Options of {@link SandboxInformers}. */
export interface SandboxInformersOptions {
  client: KubernetesClient;
  /** First back-off delay's upper bound, in ms (WATCH_RETRY_DELAY_MS). */
  retryDelayMs: number;
  /** `timeoutSeconds` of every watch (WATCH_TIMEOUT_SECONDS; under client-node's 30 s idle cut). */
  watchTimeoutSeconds: number;
  /** Largest back-off delay, in ms (default 30 000). */
  backoffCapMs?: number;
  /** How long a 401 may last before the waits end, in ms (default 60 000). */
  unauthorizedBoundMs?: number;
  /**
   * How long a 403 may last before the waits end (pods) or the events degrade, in ms (default
   * 60 000: a restarted kube-apiserver answers 403 until its RBAC caches have synced).
   */
  forbiddenBoundMs?: number;
  /** How long an event of a pod the pods cache does not hold is kept, in ms (default 120 000). */
  unknownPodEventGraceMs?: number;
  logger?: InformerLogger;
  observer?: WatchObserver;
  /** Source of [0, 1) for jitter (default Math.random). */
  random?: () => number;
  /** Clock, epoch ms (default Date.now). */
  now?: () => number;
  /**
   * Why a waited-for pod that no longer exists is gone when nothing deleted it, for
   * {@link SandboxInformers.missingPodReason}; undefined (the default): it was deleted,
   * {@link MISSING_POD_EXPLANATION}. The embedded stack names the pods its restart took (its
   * cluster starts empty), so only those say so: a pod deleted after the restart still says
   * it was deleted.
   */
  explainMissingPod?: (pod: { name: string; uid: string }) => string | undefined;
}

/** Why a waited-for pod is gone unless {@link SandboxInformersOptions.explainMissingPod} knows. */
export const MISSING_POD_EXPLANATION = 'it was deleted before it had an IP';

/** What {@link SandboxInformers.observe} reports: every change, of every pod. */
export interface InformersObserver {
  /** A pod changed; `type` as on a watch. */
  onPod?(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: V1Pod): void;
  /** A `FailedCreatePodSandBox` event was recorded or updated. */
  onEvent?(event: CoreV1Event): void;
  /** The pods informer is refused (403 or 401 past its bound): no wait can see an IP. */
  onPodsRefused?(message: string): void;
  /** Both informers have listed (first list, or a re-list): the caches are complete now. */
  onListed?(): void;
  /** The informers are stopping: nothing more will be reported. `stop()` awaits what it returns. */
  onStopped?(): Promise<void> | void;
}

/** Why the informers cannot serve the pods a wait needs; undefined while they can. */
export type PodsRefusal = string | undefined;

/**
 * The worker's two informers, and who observes them.
 *
 * Events cache bound: only `FailedCreatePodSandBox` events of pods in the namespace are listed
 * and watched (field selector). An event is kept while its pod is in the pods cache (a wait,
 * or a retry of one on this worker, may still ask for it); it is evicted when its pod is
 * deleted, and an event of a pod the pods cache never held (not a sandbox pod, or one deleted before this worker listed it) is evicted after
 * `unknownPodEventGraceMs` (default 2 min). So the cache holds about one event per live
 * sandbox pod that a node refused, and nothing for other pods.
 */
export class SandboxInformers {
  private readonly pods: KeptInformer<V1Pod>;
  private readonly events: KeptInformer<CoreV1Event>;
  /** Events by involved pod uid, then by event name. */
  private readonly eventsByUid = new Map<string, Map<string, CoreV1Event>>();
  /** When an event of a pod not in the pods cache was first seen, by pod uid. */
  private readonly unknownSinceMs = new Map<string, number>();
  private readonly livePodUids = new Set<string>();
  private readonly observers = new Set<InformersObserver>();
  private readonly listed = { pods: false, events: false };
  private sweepTimer: NodeJS.Timeout | undefined;
  private eventsDegradedWarned = false;

  constructor(private readonly options: SandboxInformersOptions) {
    const { client } = options;
    const namespace = client.namespace;
    const labelSelector = POD_LABELS.sandboxId; // every pod that carries a sandbox id
    const fieldSelector = `reason=${FAILED_SANDBOX_EVENT.reason},involvedObject.kind=Pod`;
    this.pods = new KeptInformer<V1Pod>(
      'pods',
      options,
      `/api/v1/namespaces/${namespace}/pods`,
      () => client.core.listNamespacedPod({ namespace, labelSelector }),
      { labelSelector },
      (refusal) => this.podsRefusalChanged(refusal),
      () => this.resourceListed('pods'),
    );
    this.events = new KeptInformer<CoreV1Event>(
      'events',
      options,
      `/api/v1/namespaces/${namespace}/events`,
      () => client.core.listNamespacedEvent({ namespace, fieldSelector }),
      { fieldSelector },
      (refusal) => this.eventsRefusalChanged(refusal),
      () => this.resourceListed('events'),
    );
    this.pods.listWatch.on(ADD, (pod) => this.podChanged('ADDED', pod));
    this.pods.listWatch.on(UPDATE, (pod) => this.podChanged('MODIFIED', pod));
    this.pods.listWatch.on(DELETE, (pod) => this.podChanged('DELETED', pod));
    this.events.listWatch.on(ADD, (event) => this.eventChanged(event));
    this.events.listWatch.on(UPDATE, (event) => this.eventChanged(event));
    this.events.listWatch.on(DELETE, (event) => this.eventRemoved(event));
  }

  /** Lists and watches both resources (in the background); restarts them on errors. */
  start(): void {
    this.pods.start();
    this.events.start();
    const graceMs = this.options.unknownPodEventGraceMs ?? 120_000;
    this.sweepTimer = setInterval(() => this.evictEvents(), Math.max(1_000, graceMs / 4));
    this.sweepTimer.unref();
  }

  /** Stops both informers and the eviction timer, and tells the observers. Idempotent. */
  async stop(): Promise<void> {
    if (this.sweepTimer) clearInterval(this.sweepTimer);
    const observers = [...this.observers].map((observer) => observer.onStopped?.());
    await Promise.all([...observers, this.pods.stop(), this.events.stop()]);
  }

  /** Why the waits cannot see pods now (403, or 401 past its bound); undefined when they can. */
  get podsRefusal(): PodsRefusal {
    return this.pods.refusal;
  }

  /** Whether the events informer is refused (the waits rely on the pod alone meanwhile). */
  get eventsDegraded(): boolean {
    return this.events.refusal !== undefined;
  }

  /** The cached pod of that name, if any. */
  cachedPod(name: string): V1Pod | undefined {
    return this.pods.listWatch.get(name, this.options.client.namespace);
  }

  /** The cached `FailedCreatePodSandBox` events of the pod with `uid`. */
  cachedEvents(uid: string): CoreV1Event[] {
    return [...(this.eventsByUid.get(uid)?.values() ?? [])];
  }

  /** How many events the events cache holds (for tests and the benchmark). */
  get eventsCacheSize(): number {
    return this.events.listWatch.list().length;
  }

  /**
   * The reason of a wait whose pod {@link readPod} found gone: `pod <name> no longer exists; `
   * and why ({@link SandboxInformersOptions.explainMissingPod}, else
   * {@link MISSING_POD_EXPLANATION}).
   */
  missingPodReason(pod: { name: string; uid: string }): string {
    const why = this.options.explainMissingPod?.(pod) ?? MISSING_POD_EXPLANATION;
    return `pod ${pod.name} no longer exists; ${why}`;
  }

  /**
   * Reads one pod by name from the apiserver (a GET, once per wait, only when the pods cache
   * does not hold it yet: it may have been deleted before this worker listed it).
   * @returns the pod, or undefined when it does not exist
   * @throws the client's error for any other answer
   */
  async readPod(name: string): Promise<V1Pod | undefined> {
    try {
      return await this.options.client.core.readNamespacedPod({
        name,
        namespace: this.options.client.namespace,
      });
    } catch (err) {
      if (httpStatusOf(err) === 404) return undefined;
      throw err;
    }
  }

  /**
   * Calls `observer` on every change of every pod and every refusal event, whoever waits for it,
   * and after each list once both informers have listed (the caches are complete then), until
   * the returned function is called. The pending-wait decider (src/verdict/readiness-decider.ts)
   * uses it to decide waits that any worker started.
   */
  observe(observer: InformersObserver): () => void {
    this.observers.add(observer);
    return () => this.observers.delete(observer);
  }

  /** Whether both informers have listed at least once (their caches hold every object). */
  get synced(): boolean {
    return this.listed.pods && this.listed.events;
  }

  private resourceListed(resource: InformerResource): void {
    this.listed[resource] = true;
    if (!this.synced) return;
    for (const observer of [...this.observers]) observer.onListed?.();
  }

  private podChanged(type: 'ADDED' | 'MODIFIED' | 'DELETED', pod: V1Pod): void {
    const uid = pod.metadata?.uid ?? '';
    if (type === 'DELETED') {
      this.livePodUids.delete(uid);
      this.forgetEventsOf(uid);
    } else {
      this.livePodUids.add(uid);
      this.unknownSinceMs.delete(uid);
    }
    for (const observer of [...this.observers]) observer.onPod?.(type, pod);
  }

  private eventChanged(event: CoreV1Event): void {
    const uid = event.involvedObject?.uid ?? '';
    const name = event.metadata?.name ?? '';
    if (!this.livePodUids.has(uid)) {
      this.unknownSinceMs.set(uid, this.unknownSinceMs.get(uid) ?? this.now());
    }
    let events = this.eventsByUid.get(uid);
    if (!events) this.eventsByUid.set(uid, (events = new Map()));
    events.set(name, event);
    for (const observer of [...this.observers]) observer.onEvent?.(event);
  }

  private eventRemoved(event: CoreV1Event): void {
    const uid = event.involvedObject?.uid ?? '';
    const events = this.eventsByUid.get(uid);
    events?.delete(event.metadata?.name ?? '');
    if (events?.size === 0) this.eventsByUid.delete(uid);
  }

  /**
   * Evicts the events no wait can need: those of pods not in the pods cache, first seen more
   * than `unknownPodEventGraceMs` ago. (Events of deleted pods go at once, when the pods
   * informer sees the deletion.) Runs every quarter of the grace period.
   */
  evictEvents(): void {
    const graceMs = this.options.unknownPodEventGraceMs ?? 120_000;
    const now = this.now();
    for (const [uid, sinceMs] of this.unknownSinceMs) {
      if (this.livePodUids.has(uid)) {
        this.unknownSinceMs.delete(uid);
      } else if (now - sinceMs >= graceMs) {
        this.forgetEventsOf(uid);
      }
    }
  }

  /**
   * Removes a pod's events from our index and from ListWatch's cache. ListWatch has no
   * eviction; its cache is the map client-node's own `deleteObject` works on, reached by
   * name because TypeScript marks it private. A re-list or a later update of an evicted event
   * adds it back, and this rule evicts it again.
   */
  private forgetEventsOf(uid: string): void {
    this.unknownSinceMs.delete(uid);
    const events = this.eventsByUid.get(uid);
    if (!events) return;
    this.eventsByUid.delete(uid);
    const cache = (
      this.events.listWatch as unknown as { objects: Map<string, Map<string, CoreV1Event>> }
    ).objects;
    for (const event of events.values()) deleteObject(cache, event);
  }

  private podsRefusalChanged(refusal: string | undefined): void {
    if (refusal === undefined) return;
    for (const observer of [...this.observers]) observer.onPodsRefused?.(refusal);
  }

  private eventsRefusalChanged(refusal: string | undefined): void {
    if (refusal === undefined || this.eventsDegradedWarned) return;
    this.eventsDegradedWarned = true;
    this.options.logger?.warn(
      { resource: 'events' },
      `${refusal}; until then the waits of this worker rely on the pod alone, so a node's ` +
        'refusal ends a create only at its deadline',
    );
  }

  private now(): number {
    return this.options.now?.() ?? Date.now();
  }
}
