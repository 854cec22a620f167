/**
 * The readiness wait (docs/architecture.md, "The readiness watch"): while waiting for the pod's IP, watch the pod and
 * its `FailedCreatePodSandBox` events at the same time, and end on the first decisive signal.
 * Every read is a watch; nothing polls.
 */
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import type { KubernetesClient } from './client.js';
import type { PodRef } from './pods.js';
import { decisiveRefusal, REFUSAL_RULES } from './refusal.js';
import { WatchLoop, type WatchEndDecision, type WatchOpenCause } from './watch-loop.js';

/** The first decisive outcome of a readiness wait. */
export type ReadinessOutcome =
  /** The pod has an IP. */
  | { outcome: 'ready'; podIp: string }
  /** The node refused the pod as invalid; `reason` is the node's text after the marker. */
  | {
      outcome: 'refused';
      code: 'InvalidArgument';
      reason: string;
      /** The refusal event's name, and its lastTimestamp (ISO-8601) if it had one. */
      eventName: string;
      eventLastTimestamp?: string;
      /** The node that refused: the event's `source.host` (or `reportingInstance`). */
      nodeName?: string;
    }
  /** The pod failed, was deleted, or was replaced before it had an IP. */
  | { outcome: 'podFailed'; reason: string };

/** The watched resources. */
export type WatchResource = 'pods' | 'events';

/** Structured logger subset (pino-compatible). */
export interface WatchLogger {
  warn(fields: Record<string, unknown>, message: string): void;
  debug?(fields: Record<string, unknown>, message: string): void;
}

/** Hooks for metrics and tests; all optional. */
export interface WatchObserver {
  /** A watch request is about to be sent, first or again. */
  onWatchOpen?(resource: WatchResource, cause: WatchOpenCause): void;
  /** A watch stream was established (`open` true) or has closed (`open` false). */
  onWatchStream?(resource: WatchResource, open: boolean): void;
}

/** Input of {@link awaitPodReady}. */
export interface ReadinessWaitOptions {
  client: KubernetesClient;
  pod: PodRef;
  /**
   * Aborting stops both watches and rejects with the signal's reason. The wait has no deadline
   * of its own: the caller bounds it (the create workflow's deadline timer cancels the activity,
   * which aborts this signal; docs/architecture.md, "Deadline").
   */
  signal?: AbortSignal;
  /** Delay before re-opening a watch, in ms (WATCH_RETRY_DELAY_MS). */
  watchRetryDelayMs: number;
  logger?: WatchLogger;
  observer?: WatchObserver;
}

/** Ends the wait once: with an outcome, or with an error (the abort's reason). */
type Finish = (result: { outcome: ReadinessOutcome } | { error: unknown }) => void;

/** Logs one warning per wait when a watch is refused outright and given up (degraded). */
type Degrade = (resource: WatchResource) => (decision: WatchEndDecision) => void;

/**
 * Waits until the pod has an IP, the node refuses it as invalid, or the pod fails, whichever
 * comes first, or until `signal` aborts (docs/architecture.md, "The readiness watch").
 *
 * - Pod watch: `fieldSelector=metadata.name=<name>`; every event's uid is checked. The first
 *   open has no resourceVersion (current state first); re-opens resume from the last seen
 *   resourceVersion, and from the current state again after a 410.
 * - Events watch: `fieldSelector=involvedObject.uid=<uid>,reason=FailedCreatePodSandBox`,
 *   always from `resourceVersion=0` so refusals recorded before the wait are replayed; ADDED
 *   and MODIFIED are treated alike.
 * - A watch that ends, times out, drops, or fails with 408/410/429/5xx re-opens after
 *   `watchRetryDelayMs`. One refused outright with another 4xx stops; one warning is logged for
 *   this wait and the other watch goes on.
 *
 * Both watches are stopped before this returns or rejects.
 * @returns the decisive outcome; never rejects for watch errors
 * @throws the signal's reason (an AbortError by default) when `signal` aborts first
 * Watch semantics: Kubernetes API concepts, "Efficient detection of changes" and "Resource
 * versions"; event aggregation: client-go `EventCorrelator`.
 */
export function awaitPodReady(options: ReadinessWaitOptions): Promise<ReadinessOutcome> {
  const { signal } = options;
  return new Promise<ReadinessOutcome>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    let settled = false;
    const loops: WatchLoop[] = [];
    const finish: Finish = (result) => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      for (const loop of loops) loop.stop();
      if ('outcome' in result) resolve(result.outcome);
      else reject(result.error);
    };
    const onAbort = (): void => finish({ error: abortReason(signal as AbortSignal) });
    signal?.addEventListener('abort', onAbort, { once: true });
    const degrade = degradeOnce(options);
    loops.push(eventsWatch(options, finish, degrade), podWatch(options, finish, degrade));
    for (const loop of loops) loop.start();
  });
}

function degradeOnce({ pod, logger }: ReadinessWaitOptions): Degrade {
  let warned = false;
  return (resource) => (decision) => {
    if (warned) return;
    warned = true;
    logger?.warn(
      { resource, status: decision.status, pod_name: pod.name, pod_uid: pod.uid },
      `the ${resource} ${resource === 'pods' ? 'watch (or its list)' : 'watch'} was refused ` +
        `(HTTP ${decision.status}); waiting for the pod IP without it`,
    );
  };
}

/**
 * The pod watch: by name, resuming from the last resourceVersion seen; without one (or after a
 * 410) the pod's state is re-established with a list first. Watching from the version the
 * create saw replays every change since, a deletion included.
 */
function podWatch(options: ReadinessWaitOptions, finish: Finish, degrade: Degrade): WatchLoop {
  const { client, pod, observer } = options;
  const namespace = client.namespace;
  const fieldSelector = `metadata.name=${pod.name}`;
  let resourceVersion = pod.resourceVersion;
  const onEvent = (type: string, object: unknown): void => {
    const current = object as V1Pod;
    if (current.metadata?.resourceVersion) resourceVersion = current.metadata.resourceVersion;
    const outcome = podOutcome(type, current, pod.uid);
    if (outcome) finish({ outcome });
  };
  const listPod = async (): Promise<void> => {
    if (resourceVersion) return;
    const list = await client.core.listNamespacedPod({ namespace, fieldSelector });
    const current = list.items.find((item) => item.metadata?.uid === pod.uid);
    if (!current) {
      const reason = `pod ${pod.name} no longer exists; it was deleted before it had an IP`;
      finish({ outcome: { outcome: 'podFailed', reason } });
      return;
    }
    onEvent('ADDED', current);
    resourceVersion = list.metadata?.resourceVersion;
  };
  return new WatchLoop({
    kubeConfig: client.kubeConfig,
    path: `/api/v1/namespaces/${namespace}/pods`,
    prepare: listPod,
    query: () => ({ fieldSelector, ...(resourceVersion ? { resourceVersion } : {}) }),
    onEvent,
    retryDelayMs: options.watchRetryDelayMs,
    onDegrade: degrade('pods'),
    onOpen: (cause) => observer?.onWatchOpen?.('pods', cause),
    onStreamChange: (open) => observer?.onWatchStream?.('pods', open),
    onReopenScheduled: (decision) => {
      if (decision.status === 410) resourceVersion = undefined; // too old: start over
    },
  });
}

/**
 * The events watch: the pod's `FailedCreatePodSandBox` events, always from resourceVersion 0
 * (events are not in the watch cache and 0 replays what is recorded).
 */
function eventsWatch(options: ReadinessWaitOptions, finish: Finish, degrade: Degrade): WatchLoop {
  const { client, pod, observer } = options;
  return new WatchLoop({
    kubeConfig: client.kubeConfig,
    path: `/api/v1/namespaces/${client.namespace}/events`,
    query: () => ({
      resourceVersion: '0',
      fieldSelector: `involvedObject.uid=${pod.uid},reason=${REFUSAL_RULES.reason}`,
    }),
    onEvent: (type, object) => {
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      const outcome = refusalOutcome(object as CoreV1Event, pod.uid);
      if (outcome) finish({ outcome });
    },
    retryDelayMs: options.watchRetryDelayMs,
    onDegrade: degrade('events'),
    onOpen: (cause) => observer?.onWatchOpen?.('events', cause),
    onStreamChange: (open) => observer?.onWatchStream?.('events', open),
  });
}

/** The `refused` outcome an event carries for the pod with `uid`, if it is a decisive refusal. */
function refusalOutcome(event: CoreV1Event, uid: string): ReadinessOutcome | undefined {
  const refusal = decisiveRefusal(event, uid);
  if (!refusal) return undefined;
  return {
    outcome: 'refused',
    code: 'InvalidArgument',
    reason: refusal.reason,
    eventName: event.metadata?.name ?? '',
    eventLastTimestamp: isoOrUndefined(event.lastTimestamp ?? event.eventTime),
    nodeName: event.source?.host || event.reportingInstance || undefined,
  };
}

/** The decisive outcome a pod watch event carries for the pod with `uid`, if any. */
export function podOutcome(type: string, pod: V1Pod, uid: string): ReadinessOutcome | undefined {
  const eventUid = pod.metadata?.uid;
  if (eventUid !== uid) {
    // Another pod now holds the name: ours was deleted (its DELETED may have been missed).
    if (type !== 'DELETED' && eventUid) {
      return {
        outcome: 'podFailed',
        reason: `pod ${pod.metadata?.name} was replaced by another pod`,
      };
    }
    return undefined;
  }
  if (type === 'DELETED') {
    return {
      outcome: 'podFailed',
      reason: `pod ${pod.metadata?.name} was deleted before it had an IP`,
    };
  }
  const podIp = pod.status?.podIP;
  if (podIp) return { outcome: 'ready', podIp };
  if (pod.status?.phase === 'Failed') {
    const why = pod.status.reason || pod.status.message || 'no reason given';
    return { outcome: 'podFailed', reason: `pod ${pod.metadata?.name} failed: ${why}` };
  }
  return undefined;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The wait was aborted', 'AbortError');
}

function isoOrUndefined(value: Date | string | undefined | null): string | undefined {
  if (!value) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}
