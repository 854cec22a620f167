/**
 * What a pod's state and its node's events mean for its readiness wait (docs/architecture.md,
 * "The readiness watch"): the first decisive outcome (an IP, the node's refusal, the pod's
 * failure) as the worker's informers (src/kubernetes/sandbox-informers.ts) show it. The wait
 * activity reads the caches with it when it starts (src/verdict/readiness-wait.ts), and the
 * worker's decider decides each change with it (src/verdict/readiness-decider.ts). Nothing here
 * sends a list or a watch: the worker's two informers do, for every wait at once.
 */
import type { CoreV1Event, V1Pod } from '@kubernetes/client-node';
import { podWaitOf, type PodWait } from './pod-wait.js';
import { decisiveRefusal, nodeRefusal, parseRefusal } from './refusal.js';
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

/**
 * The decisive outcome a change of a sandbox pod carries for its wait (the decider's rule for each
 * pod change the pods informer reports, src/verdict/readiness-decider.ts): the change itself
 * ({@link podOutcome}), else, once the pod is bound to its node, a refusal the events cache
 * already holds for it ({@link cachedOutcome}: only the pod's node's refusal counts, so one seen
 * before the binding counts now). Undefined when the change decides nothing.
 */
export function podChangeOutcome(
  informers: SandboxInformers,
  type: 'ADDED' | 'MODIFIED' | 'DELETED',
  pod: V1Pod,
  wait: Pick<PodWait, 'pod' | 'placement'>,
  bounds: RefusalBounds = DEFAULT_REFUSAL_BOUNDS,
): ReadinessOutcome | undefined {
  const { uid } = wait.pod;
  return (
    podOutcome(type, pod, uid, wait.placement) ??
    (pod.spec?.nodeName && informers.cachedEvents(uid).length > 0
      ? cachedOutcome(informers, wait.pod, wait.placement, bounds)
      : undefined)
  );
}

/**
 * The wait a refusal event decides, and how (the decider's rule for each event the events
 * informer reports): an event that parses as a refusal (src/verdict/refusal.ts, parseRefusal) of
 * the pod the pods cache holds under its involved object's name and uid, judged against that pod
 * and the wait it names ({@link refusalOutcome}, src/verdict/pod-wait.ts). Undefined when the
 * event decides nothing (not a refusal, not decisive for that wait, or its pod not cached).
 */
export function eventChangeOutcome(
  informers: SandboxInformers,
  event: CoreV1Event,
  bounds: RefusalBounds = DEFAULT_REFUSAL_BOUNDS,
): { wait: PodWait; outcome: ReadinessOutcome } | undefined {
  const uid = event.involvedObject?.uid;
  if (!uid) return undefined;
  const pod = informers.cachedPod(event.involvedObject?.name ?? '');
  if (pod?.metadata?.uid !== uid || !parseRefusal(event.message)) return undefined;
  const wait = podWaitOf(pod);
  const outcome = wait && refusalOutcome(event, pod, wait.placement, bounds);
  return wait && outcome ? { wait, outcome } : undefined;
}

/**
 * The outcome of a wait whose pod the pods cache lacks, read once by name (one GET: it may have
 * been deleted before this worker listed it): the pod as read ({@link podOutcome}), or, when it
 * no longer exists (404), `podFailed` with why (SandboxInformers.missingPodReason).
 * @returns undefined when the pod as read decides nothing yet
 * @throws the read's error for any answer but 404 (the informers will report the pod)
 */
export async function readOutcome(
  informers: SandboxInformers,
  wait: Pick<PodWait, 'pod'>,
): Promise<ReadinessOutcome | undefined> {
  const current = await informers.readPod(wait.pod.name);
  if (!current) return { outcome: 'podFailed', reason: informers.missingPodReason(wait.pod) };
  const placement =
    current.metadata?.uid === wait.pod.uid ? podWaitOf(current)?.placement : undefined;
  return podOutcome('MODIFIED', current, wait.pod.uid, placement);
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

function isoOrUndefined(value: Date | string | undefined | null): string | undefined {
  if (!value) return undefined;
  const date = value instanceof Date ? value : new Date(value);
  return Number.isNaN(date.getTime()) ? undefined : date.toISOString();
}
