/**
 * The readiness wait (docs/architecture.md, "The readiness watch"): while waiting for the pod's
 * IP, follow the pod and its `FailedCreatePodSandBox` events through the worker's informers
 * (src/kubernetes/sandbox-informers.ts), and end on the first decisive signal. The wait itself
 * sends no list and no watch: the worker's two informers do, for every wait at once.
 */
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import type { PodRef } from '../kubernetes/pods.js';
import { decisiveRefusal, nodeRefusal } from './refusal.js';
import { DEFAULT_REFUSAL_BOUNDS, type RefusalBounds } from './refusal-bounds.js';
import type { WaitPlacement } from '../../contract/index.js';
import type { SandboxInformers } from '../kubernetes/sandbox-informers.js';

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
      /** The node that refused: the pod's node, which reported the event. */
      nodeName?: string;
    }
  /**
   * The node refused the pod with a code of the template's `replace_on` (docs/architecture.md,
   * "Re-placement"): the create moves to another node.
   */
  | {
      outcome: 'nodeRefused';
      code: string;
      reason: string;
      eventName: string;
      eventLastTimestamp?: string;
      /** The pod's node, which reported the event. */
      nodeName: string;
    }
  /** The scheduler found no node the pod's affinity allows (a re-placement's pod only). */
  | { outcome: 'unschedulable'; reason: string }
  /** The pod failed, was deleted, is being deleted, or was replaced before it had an IP. */
  | { outcome: 'podFailed'; reason: string }
  /** The worker may not watch pods (403, or 401 past its bound): nothing can show an IP. */
  | { outcome: 'watchRefused'; reason: string };

/** Input of {@link awaitPodReady}. */
export interface ReadinessWaitOptions {
  /** The worker's informers (one pair per process). */
  informers: SandboxInformers;
  pod: PodRef;
  /**
   * Aborting ends the wait and rejects with the signal's reason. The wait has no deadline
   * of its own: the caller bounds it (the create workflow's deadline timer cancels the activity,
   * which aborts this signal; docs/architecture.md, "Deadline").
   */
  signal?: AbortSignal;
  /** How long the pods cache may lack the pod before it is read once by name, in ms (default 5 000). */
  podReadDelayMs?: number;
  /** What a refusal may claim (default {@link DEFAULT_REFUSAL_BOUNDS}). */
  bounds?: RefusalBounds;
}

/** Default of {@link ReadinessWaitOptions.podReadDelayMs}, in ms. */
export const POD_READ_DELAY_MS = 5_000;

/**
 * Waits until the pod has an IP, the node refuses it as invalid, or the pod fails, whichever
 * comes first, or until `signal` aborts (docs/architecture.md, "The readiness watch").
 *
 * Subscribes to the pod's uid first, then reads the informers' caches (so a refusal recorded
 * before the wait began, or an IP, is found at once), then decides on every change the
 * informers report for this pod. When the pods cache still lacks the pod after
 * `podReadDelayMs`, the pod is read once by name (it may have been deleted before this worker
 * listed it). While the
 * informers have lost the apiserver the wait goes on; they catch up after their re-list.
 * @returns the decisive outcome; never rejects for watch errors (the informers retry them)
 * @throws the signal's reason (an AbortError by default) when `signal` aborts first
 * Event aggregation: client-go `EventCorrelator`.
 */
export function awaitPodReady(options: ReadinessWaitOptions): Promise<ReadinessOutcome> {
  const { signal, informers, pod } = options;
  return new Promise<ReadinessOutcome>((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortReason(signal));
      return;
    }
    let settled = false;
    let onSettled = (): void => undefined;
    const finish = (result: { outcome: ReadinessOutcome } | { error: unknown }): void => {
      if (settled) return;
      settled = true;
      signal?.removeEventListener('abort', onAbort);
      unsubscribe();
      onSettled();
      if ('outcome' in result) resolve(result.outcome);
      else reject(result.error);
    };
    const decide = (outcome: ReadinessOutcome | undefined): void => {
      if (outcome) finish({ outcome });
    };
    const onAbort = (): void => finish({ error: abortReason(signal as AbortSignal) });
    signal?.addEventListener('abort', onAbort, { once: true });
    const bounds = options.bounds ?? DEFAULT_REFUSAL_BOUNDS;
    const unsubscribe = informers.subscribe(pod, {
      // A pod just bound to its node may make a refusal already cached count.
      onPod: (type, current) =>
        decide(
          podOutcome(type, current, pod.uid) ?? cachedOutcome(informers, pod, undefined, bounds),
        ),
      onEvent: (event) =>
        decide(refusalOutcome(event, informers.cachedPod(pod.name), undefined, bounds)),
      onPodsRefused: (reason) => decide({ outcome: 'watchRefused', reason }),
    });
    // What the caches already hold.
    decide(cachedOutcome(informers, pod, undefined, bounds));
    if (settled || informers.cachedPod(pod.name)) return;
    // Not in the cache yet: the informer normally delivers the new pod within milliseconds.
    // If it still has not after `podReadDelayMs`, the pod may have been deleted before this
    // worker listed it (e.g. while no worker ran): read it once by name.
    const readTimer = setTimeout(() => {
      if (settled || informers.cachedPod(pod.name)) return;
      informers.readPod(pod.name).then(
        (current) => {
          if (current) decide(podOutcome('MODIFIED', current, pod.uid));
          else {
            decide({
              outcome: 'podFailed',
              reason: informers.missingPodReason(pod),
            });
          }
        },
        () => undefined, // the informers will report the pod
      );
    }, options.podReadDelayMs ?? POD_READ_DELAY_MS);
    readTimer.unref();
    onSettled = () => clearTimeout(readTimer);
  });
}

/**
 * The decisive outcome the informers' caches hold for the pod now, if any: the pods informer
 * refused, a decisive refusal event of its uid from its node's kubelet (judged against the
 * cached pod: {@link refusalOutcome}), or its cached pod's state ({@link podOutcome}).
 * Undefined when nothing is decided yet, including when the cache lacks the pod (it may not
 * have arrived yet, or may have been deleted before the informer listed: the caller reads it).
 */
export function cachedOutcome(
  informers: SandboxInformers,
  pod: { name: string; uid: string },
  placement?: WaitPlacement,
  bounds: RefusalBounds = DEFAULT_REFUSAL_BOUNDS,
): ReadinessOutcome | undefined {
  if (informers.podsRefusal) return { outcome: 'watchRefused', reason: informers.podsRefusal };
  const cached = informers.cachedPod(pod.name);
  if (cached?.metadata?.uid === pod.uid) {
    for (const event of informers.cachedEvents(pod.uid)) {
      const refused = refusalOutcome(event, cached, placement, bounds);
      if (refused) return refused;
    }
  }
  return cached ? podOutcome('MODIFIED', cached, pod.uid, placement) : undefined;
}

/**
 * The outcome an event carries for `pod` (as the pods cache holds it; undefined: not cached, so
 * no event counts yet): `refused` for a decisive refusal, `nodeRefused` for a code of
 * `placement.replaceOn` (src/verdict/refusal.ts, classifyRefusal), else undefined. Only an event
 * of the pod's uid reported by the kubelet of the pod's node counts (src/verdict/refusal.ts,
 * isSandboxFailureOf), and only within `bounds` (src/verdict/refusal-bounds.ts: an event from
 * the future, or a decisive one claiming a rootfs above the template's largest disk, decides
 * nothing and is logged). The event's time is its `lastTimestamp`, else `series.lastObservedTime`,
 * else `eventTime` (an event written through events.k8s.io/v1 has no `lastTimestamp`).
 */
export function refusalOutcome(
  event: CoreV1Event,
  pod: V1Pod | undefined,
  placement?: WaitPlacement,
  bounds: RefusalBounds = DEFAULT_REFUSAL_BOUNDS,
): ReadinessOutcome | undefined {
  if (!pod) return undefined;
  const nodeName = pod.spec?.nodeName ?? '';
  const eventName = event.metadata?.name ?? '';
  const eventLastTimestamp = isoOrUndefined(
    event.lastTimestamp ?? event.series?.lastObservedTime ?? event.eventTime,
  );
  const onNode = placement ? nodeRefusal(event, pod, placement.replaceOn) : undefined;
  if (onNode) {
    if (bounds.outOfBounds(event, pod, onNode)) return undefined;
    const { code, reason } = onNode;
    return { outcome: 'nodeRefused', code, reason, eventName, eventLastTimestamp, nodeName };
  }
  const refusal = decisiveRefusal(event, pod);
  if (!refusal || bounds.outOfBounds(event, pod, refusal)) return undefined;
  return {
    outcome: 'refused',
    code: 'InvalidArgument',
    reason: refusal.reason,
    eventName,
    eventLastTimestamp,
    nodeName,
  };
}

/**
 * The decisive outcome a pod change carries for the pod with `uid`, if any (pure): another uid
 * under the name means ours was replaced; DELETED, or a deletionTimestamp, means it failed
 * before it was ready (a pod being deleted is never ready, even with an IP); an IP means
 * ready; phase `Failed` means failed.
 */
export function podOutcome(
  type: string,
  pod: V1Pod,
  uid: string,
  placement?: WaitPlacement,
): ReadinessOutcome | undefined {
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
  if (pod.metadata?.deletionTimestamp) {
    // Being deleted: never ready, even with an IP (a MODIFIED frame, or a re-list, can carry both).
    return {
      outcome: 'podFailed',
      reason: `pod ${pod.metadata.name} is being deleted; it was deleted before it was ready`,
    };
  }
  const podIp = pod.status?.podIP;
  if (podIp) return { outcome: 'ready', podIp };
  if (pod.status?.phase === 'Failed') {
    const why = pod.status.reason || pod.status.message || 'no reason given';
    return { outcome: 'podFailed', reason: `pod ${pod.metadata?.name} failed: ${why}` };
  }
  if (placement?.endOnUnschedulable && !pod.spec?.nodeName) {
    // kube-scheduler's verdict (its PodScheduled condition), e.g. every node is excluded.
    const scheduled = pod.status?.conditions?.find((c) => c.type === 'PodScheduled');
    if (scheduled?.status === 'False' && scheduled.reason === 'Unschedulable') {
      return { outcome: 'unschedulable', reason: scheduled.message || 'no node can take the pod' };
    }
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
