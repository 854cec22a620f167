/**
 * Scripted faults for tests: failed watches and requests, ended or dropped streams, silent
 * watches, slow responses, and node refusals. The apiserver routes and the simulated node
 * consult this state; the stream actions act on the watch registry at once.
 */
import type { ScriptedRefusal } from './node-rules.js';
import type { WatchedResource } from './store.js';
import type { WatchRegistry } from './watch.js';

/** The fault-scripting surface tests use (`SimulatedCluster.faults`). */
export interface FaultScript {
  /**
   * Answers the next `count` watch requests on `resource` with HTTP `status` and a Kubernetes
   * Status body (e.g. 403 Forbidden, 410 Expired, 429 TooManyRequests with Retry-After, 500).
   */
  failNextWatches(resource: WatchedResource, count: number, status: number): void;
  /** Answers the next `count` non-watch requests matching method + resource (e.g. 'DELETE', 'pods') with `status`. */
  failNextRequests(method: string, resource: WatchedResource, count: number, status: number): void;
  /** Cleanly ends (res.end()) every open watch stream of the resource, or all. */
  endWatches(resource?: WatchedResource): void;
  /** Destroys the socket of every open watch of the resource, or all: a dropped connection. */
  dropWatches(resource?: WatchedResource): void;
  /** Sends an in-stream `{type:'ERROR', object: Status 410 Expired}` then ends, on open watches of the resource. */
  expireWatches(resource: WatchedResource): void;
  /** While true, new watches of the resource get headers (200) but never any event. */
  silence(resource: WatchedResource, on: boolean): void;
  /**
   * From now on the node refuses every new pod with this gRPC code and message instead of
   * deciding by disk, e.g. ('Unavailable', 'failed to reserve sandbox name'); null restores
   * normal behaviour. Applies to pods created while it is set.
   */
  refuseWith(code: string | null, message?: string): void;
  /**
   * From now on the node `nodeName` refuses every pod bound to it with this gRPC code and
   * message (e.g. ('ResourceExhausted', 'no sandbox capacity left on the node')), before
   * `refuseWith`'s script; null restores that node. Applies to pods bound while it is set.
   */
  refuseOnNode(nodeName: string, code: string | null, message?: string): void;
  /** While true, the node does nothing for new pods (never ready, no events). Applies to pods created while it is set. */
  neverReady(on: boolean): void;
  /** Delay (ms) added before the response headers of every request are sent (a slow apiserver). 0 turns it off. */
  delayResponses(ms: number): void;
  /**
   * A LimitRange-like rule: a pod whose container asks for an `ephemeral-storage` limit over
   * `max` (a quantity in Mi or Gi, e.g. '2Gi') is refused 403 Forbidden as the LimitRanger
   * admission words it; null removes the rule.
   */
  limitEphemeralStorage(max: string | null): void;
  /**
   * A ResourceQuota-like rule: at most `pods` pods in a namespace; a create over it is refused
   * 403 Forbidden `exceeded quota: <name>, …` as the ResourceQuota admission words it; null
   * removes the rule.
   */
  quotaPods(quota: { name: string; pods: number } | null): void;
  /**
   * RBAC: while on, the service's account may not `verb` `resource`: such requests answer 403
   * as the RBAC authorizer words it, and a SelfSubjectAccessReview for it answers
   * `allowed: false`. Everything is granted by default.
   */
  deny(verb: string, resource: string, on: boolean): void;
  /** While true, every request (discovery and reviews included) answers 401 Unauthorized. */
  rejectCredentials(on: boolean): void;
  /**
   * While true, SelfSubjectAccessReviews answer 404 `the server could not find the requested
   * resource`, as an apiserver without `authorization.k8s.io` (or a proxy in front of one that
   * does not pass it) answers; pods and events still work.
   */
  withoutAccessReviews(on: boolean): void;
}

/** A scripted node refusal: gRPC code (the `[space-err=<code>]` marker) and message. */
export type { ScriptedRefusal };

interface Pending {
  count: number;
  status: number;
}

/** The state behind `FaultScript`, read by the routes and the node. */
export class Faults implements FaultScript {
  private readonly watchFailures = new Map<WatchedResource, Pending[]>();
  private readonly requestFailures = new Map<string, Pending[]>();
  private readonly silenced = new Set<WatchedResource>();
  private scriptedRefusal: ScriptedRefusal | null = null;
  private readonly nodeRefusals = new Map<string, ScriptedRefusal>();
  private neverReadyOn = false;
  private delayMs = 0;
  private maxEphemeralStorage: string | null = null;
  private podQuota: { name: string; pods: number } | null = null;
  private readonly denied = new Set<string>();
  private credentialsRejected = false;
  private accessReviewsMissing = false;

  constructor(private readonly watches: WatchRegistry) {}

  failNextWatches(resource: WatchedResource, count: number, status: number): void {
    this.queue(this.watchFailures, resource, count, status);
  }

  failNextRequests(method: string, resource: WatchedResource, count: number, status: number): void {
    this.queue(this.requestFailures, `${method.toUpperCase()} ${resource}`, count, status);
  }

  endWatches(resource?: WatchedResource): void {
    this.watches.end(resource);
  }

  dropWatches(resource?: WatchedResource): void {
    this.watches.drop(resource);
  }

  expireWatches(resource: WatchedResource): void {
    this.watches.expire(resource);
  }

  silence(resource: WatchedResource, on: boolean): void {
    if (on) this.silenced.add(resource);
    else this.silenced.delete(resource);
  }

  refuseWith(code: string | null, message = 'simulated refusal'): void {
    this.scriptedRefusal = code === null ? null : { code, message };
  }

  refuseOnNode(nodeName: string, code: string | null, message = 'simulated refusal'): void {
    if (code === null) this.nodeRefusals.delete(nodeName);
    else this.nodeRefusals.set(nodeName, { code, message });
  }

  neverReady(on: boolean): void {
    this.neverReadyOn = on;
  }

  delayResponses(ms: number): void {
    this.delayMs = Math.max(0, ms);
  }

  limitEphemeralStorage(max: string | null): void {
    this.maxEphemeralStorage = max;
  }

  quotaPods(quota: { name: string; pods: number } | null): void {
    this.podQuota = quota;
  }

  deny(verb: string, resource: string, on: boolean): void {
    if (on) this.denied.add(`${verb} ${resource}`);
    else this.denied.delete(`${verb} ${resource}`);
  }

  rejectCredentials(on: boolean): void {
    this.credentialsRejected = on;
  }

  withoutAccessReviews(on: boolean): void {
    this.accessReviewsMissing = on;
  }

  /** Whether SelfSubjectAccessReviews answer 404. */
  get accessReviewsUnserved(): boolean {
    return this.accessReviewsMissing;
  }

  /** The LimitRange-like maximum of a container's ephemeral-storage limit, or null. */
  get ephemeralStorageMax(): string | null {
    return this.maxEphemeralStorage;
  }

  /** The ResourceQuota-like pod quota, or null. */
  get podQuotaRule(): { name: string; pods: number } | null {
    return this.podQuota;
  }

  /** Whether RBAC denies `verb` on `resource`. */
  isDenied(verb: string, resource: string): boolean {
    return this.denied.has(`${verb} ${resource}`);
  }

  /** Whether every request answers 401. */
  get rejectingCredentials(): boolean {
    return this.credentialsRejected;
  }

  /** Consumes one scripted watch failure; the HTTP status to answer with, or undefined. */
  takeWatchFailure(resource: WatchedResource): number | undefined {
    return this.take(this.watchFailures, resource);
  }

  /** Consumes one scripted request failure for method + resource; the HTTP status, or undefined. */
  takeRequestFailure(method: string, resource: WatchedResource): number | undefined {
    return this.take(this.requestFailures, `${method.toUpperCase()} ${resource}`);
  }

  /** Whether new watches of the resource are silent. */
  isSilenced(resource: WatchedResource): boolean {
    return this.silenced.has(resource);
  }

  /** The scripted refusal in effect, or null (decide by disk). */
  get refusal(): ScriptedRefusal | null {
    return this.scriptedRefusal;
  }

  /** The scripted refusal of one node: its own (refuseOnNode), else refuseWith's, else null. */
  refusalOn(nodeName: string): ScriptedRefusal | null {
    return this.nodeRefusals.get(nodeName) ?? this.scriptedRefusal;
  }

  /** Whether the node ignores new pods. */
  get neverReadyEnabled(): boolean {
    return this.neverReadyOn;
  }

  /** Delay (ms) before response headers. */
  get responseDelayMs(): number {
    return this.delayMs;
  }

  private queue<K>(map: Map<K, Pending[]>, key: K, count: number, status: number): void {
    if (count <= 0) return;
    const list = map.get(key) ?? [];
    list.push({ count, status });
    map.set(key, list);
  }

  private take<K>(map: Map<K, Pending[]>, key: K): number | undefined {
    const list = map.get(key);
    const head = list?.[0];
    if (!list || !head) return undefined;
    head.count -= 1;
    if (head.count <= 0) list.shift();
    return head.status;
  }
}
