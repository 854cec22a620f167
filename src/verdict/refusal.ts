/**
 * Reads a node's refusal out of a kubelet `FailedCreatePodSandBox` event (docs/architecture.md,
 * "The readiness watch").
 *
 * The runtime shim marks its status text with `[space-err=<GrpcCode>]`; kubelet wraps that text
 * into the event message, for example:
 *
 *     Failed to create pod sandbox: rpc error: code = Unknown desc = [space-err=InvalidArgument]
 *     rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB
 *
 * Only the marker decides. The `code = …` text does not: runtimes report most failures,
 * permanent ones included, as `Unknown`. Three classes (see {@link classifyRefusal}): the
 * request's refusal (`InvalidArgument`) ends the create; a code of the template's `replace_on`
 * (e.g. `ResourceExhausted`, `Unavailable`) means this node cannot run it, so the create moves
 * to another node (docs/architecture.md, "Re-placement"); any other code keeps the wait going
 * while kubelet retries. Pure functions, no I/O.
 */

import { FAILED_SANDBOX_EVENT } from '../kubernetes/sandbox-events.js';

/** The rules of docs/architecture.md, "The readiness watch", as data. */
export const REFUSAL_RULES = {
  /** Event reason kubelet records when the runtime cannot create the pod sandbox. */
  reason: FAILED_SANDBOX_EVENT.reason,
  /** Event type that counts. */
  type: FAILED_SANDBOX_EVENT.type,
  /**
   * The reporter that counts in the core/v1 shape kubelet writes: `source.component` (kubelet's
   * legacy recorder, cmd/kubelet/app/server.go `makeEventRecorder`:
   * `EventSource{Component: "kubelet", Host: nodeName}`), with `source.host` the node.
   */
  component: 'kubelet',
  /** gRPC codes that end the create at once; any other code keeps the wait going. */
  decisiveCodes: new Set(['InvalidArgument']),
  /** Longest reason kept, in characters. */
  maxReasonLength: 512,
  /** Prefix kubelet's event aggregation puts on a new event for repeats (client-go EventAggregator). */
  combinedPrefix: '(combined from similar events): ',
} as const;

/**
 * How a refusal's code is read: `request` ends the create (`invalid_request`); `node` re-places
 * it on another node; `wait` keeps waiting (kubelet retries the same node).
 */
export type RefusalClass = 'request' | 'node' | 'wait';

/**
 * The class of a shim code, given the template's `replace_on` codes (docs/architecture.md,
 * "Re-placement"). The request's refusal wins: `InvalidArgument` is `request` even if listed
 * (config refuses such a template anyway).
 * @param replaceOn the template's codes; empty or absent: nothing is re-placed (as before)
 */
export function classifyRefusal(code: string, replaceOn: readonly string[] = []): RefusalClass {
  if (REFUSAL_RULES.decisiveCodes.has(code as 'InvalidArgument')) return 'request';
  return replaceOn.includes(code) ? 'node' : 'wait';
}

/** The fields of a core/v1 Event this module reads; everything optional, as on the wire. */
export interface EventLike {
  type?: string;
  reason?: string;
  message?: string;
  reportingComponent?: string;
  reportingInstance?: string;
  source?: { component?: string; host?: string };
  involvedObject?: { uid?: string; kind?: string; name?: string };
}

/** The fields of the pod an event claims to be about that this module reads. */
export interface PodLike {
  metadata?: { uid?: string };
  /** `spec.nodeName`: the node the pod is bound to; unset while unscheduled. */
  spec?: { nodeName?: string };
}

/**
 * The reporting controllers (`reportingController` of events.k8s.io/v1, served as core/v1
 * `reportingComponent`) that speak for a node's kubelet:
 * - `kubelet`: kubelet's legacy recorder writes core/v1 events, and client-go tools/record
 *   (`recorderImpl.generateEvent`) sets `ReportingController = source.Component` and
 *   `ReportingInstance = source.Host`, i.e. `kubelet` and the node name;
 * - `kubernetes.io/kubelet`: the name the events.k8s.io/v1 API documents for kubelet
 *   (`reportingController`, "e.g. `kubernetes.io/kubelet`"). An event created through
 *   events.k8s.io/v1 has no `source` at all: the apiserver refuses a `deprecatedSource` on create
 *   (pkg/apis/core/validation/events.go `ValidateEventCreate`: "source: needs to be unset"), and
 *   serves it as core/v1 with `reportingComponent`/`reportingInstance` copied and `source` empty
 *   (pkg/apis/events/v1/conversion.go `Convert_v1_Event_To_core_Event`).
 */
export const KUBELET_REPORTING_CONTROLLERS: ReadonlySet<string> = new Set([
  'kubelet',
  'kubernetes.io/kubelet',
]);

/**
 * The `reportingInstance` values that name node `nodeName` for a reporting controller: the node
 * name itself (client-go tools/record, as above), or `<controller>-<hostname>`, which client-go
 * tools/events `eventBroadcasterImpl.NewRecorder` sets (`reportingController + "-" + hostname`;
 * kubelet's node name is its hostname unless `--hostname-override` says otherwise).
 */
export function reportingInstancesOf(controller: string, nodeName: string): string[] {
  return [nodeName, `${controller}-${nodeName}`];
}

/**
 * Whether an event is reported by the kubelet of node `nodeName`, in either shape the apiserver
 * serves a kubelet's event as core/v1:
 * - written as core/v1 (or as events.k8s.io/v1 `deprecatedSource`, the same field): `source`
 *   `{component: "kubelet", host: nodeName}`;
 * - written through events.k8s.io/v1: no `source`, `reportingComponent` one of
 *   {@link KUBELET_REPORTING_CONTROLLERS} and `reportingInstance` naming the node
 *   ({@link reportingInstancesOf}).
 * Every reporter field the event sets must agree: a `source` of another component or host, or a
 * reporting pair of another controller or node, is refused even when the other shape matches.
 * An empty `nodeName` (the pod is not bound) matches nothing.
 *
 * These fields are written by whoever creates the event (the apiserver does not check them
 * against the writer's identity): this narrows who can forge a refusal to those who know the
 * pod's node, it does not authenticate (docs/security.md, "Refusal events and learned floors").
 */
export function isReportedByKubeletOf(event: EventLike, nodeName: string | undefined): boolean {
  if (!nodeName) return false;
  const { component, host } = event.source ?? {};
  const hasSource = Boolean(component || host);
  if (hasSource && (component !== REFUSAL_RULES.component || host !== nodeName)) return false;
  const controller = event.reportingComponent ?? '';
  const instance = event.reportingInstance ?? '';
  const hasReporting = Boolean(controller || instance);
  if (
    hasReporting &&
    (!KUBELET_REPORTING_CONTROLLERS.has(controller) ||
      !reportingInstancesOf(controller, nodeName).includes(instance))
  ) {
    return false;
  }
  return hasSource || hasReporting;
}

/** A marker found in an event message. */
export interface ParsedRefusal {
  /** The gRPC code in the last marker, e.g. `InvalidArgument`, `Unavailable`. */
  code: string;
  /** Text after the last marker: trimmed, control characters removed, at most 512 characters. */
  reason: string;
  /** Whether the code ends the create (only `InvalidArgument`). */
  decisive: boolean;
}

// `[space-err=Code]`; codes are gRPC code names (letters only), matched leniently on spacing.
const MARKER = /\[space-err=\s*([A-Za-z]+)\s*\]/g;
// C0 and C1 control characters, DEL, and Unicode line/paragraph separators.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARACTERS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/g;

/**
 * Finds the last `[space-err=<Code>]` marker in an event message.
 * @param message the event's `message` (may carry the `(combined from similar events): ` prefix)
 * @returns the code and cleaned reason, or undefined when the message has no marker. Never throws.
 */
export function parseRefusal(message: string | undefined | null): ParsedRefusal | undefined {
  if (typeof message !== 'string' || message.length === 0) return undefined;
  let last: RegExpExecArray | undefined;
  for (const match of message.matchAll(MARKER)) last = match;
  if (!last?.[1]) return undefined;
  const code = last[1];
  return {
    code,
    reason: cleanReason(message.slice(last.index + last[0].length)),
    decisive: REFUSAL_RULES.decisiveCodes.has(code as 'InvalidArgument'),
  };
}

/** Removes control characters (replaced by spaces), collapses the result's ends and caps it. */
export function cleanReason(text: string): string {
  const cleaned = text.replace(CONTROL_CHARACTERS, ' ').trim();
  if (cleaned.length <= REFUSAL_RULES.maxReasonLength) return cleaned;
  let capped = cleaned.slice(0, REFUSAL_RULES.maxReasonLength);
  // Never leave half of a surrogate pair at the cut.
  if (/[\ud800-\udbff]$/.test(capped)) capped = capped.slice(0, -1);
  return capped.trim();
}

/**
 * Whether an event is a kubelet sandbox-creation failure of this pod: its `involvedObject.uid`
 * is the pod's uid, type Warning, reason `FailedCreatePodSandBox`, reported by the kubelet of
 * the node the pod is bound to (`spec.nodeName`; {@link isReportedByKubeletOf}). A pod without
 * a uid or a node has no such event.
 */
export function isSandboxFailureOf(event: EventLike, pod: PodLike | undefined): boolean {
  const uid = pod?.metadata?.uid;
  return (
    Boolean(uid) &&
    event.involvedObject?.uid === uid &&
    event.type === REFUSAL_RULES.type &&
    event.reason === REFUSAL_RULES.reason &&
    isReportedByKubeletOf(event, pod?.spec?.nodeName)
  );
}

/**
 * The decisive refusal an event carries for this pod, if any.
 * @returns the parsed refusal when the event counts (see {@link isSandboxFailureOf}) and its
 *   marker's code is decisive; undefined otherwise. Never throws.
 */
export function decisiveRefusal(
  event: EventLike,
  pod: PodLike | undefined,
): ParsedRefusal | undefined {
  if (!isSandboxFailureOf(event, pod)) return undefined;
  const refusal = parseRefusal(event.message);
  return refusal?.decisive ? refusal : undefined;
}

/**
 * The node-specific refusal an event carries for this pod, if any: a counted kubelet event
 * (see {@link isSandboxFailureOf}) whose marker's code is one of `replaceOn`.
 * @returns the parsed refusal, or undefined. Never throws.
 */
export function nodeRefusal(
  event: EventLike,
  pod: PodLike | undefined,
  replaceOn: readonly string[],
): ParsedRefusal | undefined {
  if (replaceOn.length === 0 || !isSandboxFailureOf(event, pod)) return undefined;
  const refusal = parseRefusal(event.message);
  return refusal && classifyRefusal(refusal.code, replaceOn) === 'node' ? refusal : undefined;
}

// The runtime shim's wording when the requested disk is below the image's root filesystem:
// `rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB`.
const CLONED_ROOTFS_SIZE = /\bcloned rootfs size\s+(\d{1,9})\s*MiB/;

/**
 * The root filesystem size a decisive refusal's reason states, which is the smallest disk the
 * image can run with: the floor learned from a node refusal (docs/architecture.md, "Rootfs
 * floors").
 * @param reason a {@link ParsedRefusal.reason} (the text after the marker)
 * @returns the size in MiB (a positive integer), or undefined when the reason states none.
 *   Never throws.
 */
export function parseRootfsFloor(reason: string | undefined | null): number | undefined {
  if (typeof reason !== 'string') return undefined;
  const match = CLONED_ROOTFS_SIZE.exec(reason);
  if (!match?.[1]) return undefined;
  const mib = Number(match[1]);
  return Number.isSafeInteger(mib) && mib > 0 ? mib : undefined;
}
