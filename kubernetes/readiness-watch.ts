/**
 * The readiness wait (design.md section 5): while waiting for the pod's IP, watch the pod and
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
    }
  /** The pod failed, was deleted, or was replaced before it had an IP. */
  | { outcome: 'podFailed'; reason: string }
  /** The deadline passed first. */
  | { outcome: 'deadline' };

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
  /** Absolute deadline, epoch ms. */
  deadlineMs: number;
  /** Aborting stops both watches and rejects with the signal's reason. */
  signal?: AbortSignal;
  /** Delay before re-opening a watch, in ms (WATCH_RETRY_DELAY_MS). */
  watchRetryDelayMs: number;
  logger?: WatchLogger;
  observer?: WatchObserver;
}

/**
 * Waits until the pod has an IP, the node refuses it as invalid, the pod fails, or the deadline
 * passes, whichever comes first.
 *
 * - Pod watch: `fieldSelector=metadata.name=<name>`; every event's uid is checked. The first
 *   open has no resourceVersion (current state first); re-opens resume from the last seen
 *   resourceVersion, and from the current state again after a 410.
 * - Events watch: `fieldSelector=involvedObject.uid=<uid>,reason=FailedCreatePodSandBox`,
 *   always from `resourceVersion=0` so refusals recorded before the wait are replayed; ADDED
 *   and MODIFIED are treated alike.
 * - A watch that ends, times out, drops, or fails with 408/410/429/5xx re-opens after
 *   `watchRetryDelayMs`. One refused outright with another 4xx stops; one warning is logged for
 *   this wait and the other watch and the deadline go on.
 *
 * Both watches and every timer are stopped before this returns or rejects.
 * @returns the decisive outcome; never rejects for watch errors
 * @throws the signal's reason (an AbortError by default) when `signal` aborts first
 * Watch semantics: Kubernetes API concepts, "Efficient detection of changes" and "Resource
 * versions"; event aggregation: client-go `EventCorrelator`.
 */
export function awaitPodReady(options: ReadinessWaitOptions): Promise<ReadinessOutcome> {
  const { client, pod, signal, logger, observer } = options;
  const namespace = client.namespace;
  return new Promise<ReadinessOutcome>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    let settled = false;
    let warned = false;
    // Watching from the version the create saw replays every change since, a deletion included.
    // Without one (or after a 410), the pod's state is re-established with a list first.
    let podResourceVersion = pod.resourceVersion;
    const loops: WatchLoop[] = [];

    const finish = (result: { outcome: ReadinessOutcome } | { error: unknown }): void => {
      if (settled) return;
      settled = true;
      clearTimeout(deadlineTimer);
      signal?.removeEventListener('abort', onAbort);
      for (const loop of loops) loop.stop();
      if ('outcome' in result) resolve(result.outcome);
      else reject(result.error);
    };

    const degrade = (resource: WatchResource) => (decision: WatchEndDecision) => {
      if (warned) return;
      warned = true;
      logger?.warn(
        { resource, status: decision.status, pod_name: pod.name, pod_uid: pod.uid },
        `the ${resource} ${resource === 'pods' ? 'watch (or its list)' : 'watch'} was refused ` +
          `(HTTP ${decision.status}); waiting for the pod IP until the deadline without it`,
      );
    };

    const onPodEvent = (type: string, object: unknown): void => {
      const current = object as V1Pod;
      if (current.metadata?.resourceVersion) podResourceVersion = current.metadata.resourceVersion;
      const outcome = podOutcome(type, current, pod.uid);
      if (outcome) finish({ outcome });
    };

    const onEventsEvent = (type: string, object: unknown): void => {
      if (type !== 'ADDED' && type !== 'MODIFIED') return;
      const event = object as CoreV1Event;
      const refusal = decisiveRefusal(event, pod.uid);
      if (!refusal) return;
      finish({
        outcome: {
          outcome: 'refused',
          code: 'InvalidArgument',
          reason: refusal.reason,
          eventName: event.metadata?.name ?? '',
          eventLastTimestamp: isoOrUndefined(event.lastTimestamp ?? event.eventTime),
        },
      });
    };

    const podFieldSelector = `metadata.name=${pod.name}`;
    const listPod = async (): Promise<void> => {
      if (podResourceVersion) return;
      const list = await client.core.listNamespacedPod({
        namespace,
        fieldSelector: podFieldSelector,
      });
      const current = list.items.find((item) => item.metadata?.uid === pod.uid);
      if (!current) {
        finish({
          outcome: {
            outcome: 'podFailed',
            reason: `pod ${pod.name} no longer exists; it was deleted before it had an IP`,
          },
        });
        return;
      }
      onPodEvent('ADDED', current);
      podResourceVersion = list.metadata?.resourceVersion;
    };

    const podLoop = new WatchLoop({
      kubeConfig: client.kubeConfig,
      path: `/api/v1/namespaces/${namespace}/pods`,
      prepare: listPod,
      query: () => ({
        fieldSelector: podFieldSelector,
        ...(podResourceVersion ? { resourceVersion: podResourceVersion } : {}),
      }),
      onEvent: onPodEvent,
      retryDelayMs: options.watchRetryDelayMs,
      onDegrade: degrade('pods'),
      onOpen: (cause) => observer?.onWatchOpen?.('pods', cause),
      onStreamChange: (open) => observer?.onWatchStream?.('pods', open),
      onReopenScheduled: (decision) => {
        if (decision.status === 410) podResourceVersion = undefined; // too old: start over
      },
    });
    const eventsLoop = new WatchLoop({
      kubeConfig: client.kubeConfig,
      path: `/api/v1/namespaces/${namespace}/events`,
      // Always from 0: events are not in the watch cache and 0 replays what is recorded.
      query: () => ({
        resourceVersion: '0',
        fieldSelector: `involvedObject.uid=${pod.uid},reason=${REFUSAL_RULES.reason}`,
      }),
      onEvent: onEventsEvent,
      retryDelayMs: options.watchRetryDelayMs,
      onDegrade: degrade('events'),
      onOpen: (cause) => observer?.onWatchOpen?.('events', cause),
      onStreamChange: (open) => observer?.onWatchStream?.('events', open),
    });
    loops.push(podLoop, eventsLoop);

    const onAbort = (): void => finish({ error: abortReason(signal as AbortSignal) });
    signal?.addEventListener('abort', onAbort, { once: true });
    const deadlineTimer = setTimeout(
      () => finish({ outcome: { outcome: 'deadline' } }),
      Math.max(0, options.deadlineMs - Date.now()),
    );
    eventsLoop.start();
    podLoop.start();
  });
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
