/**
 * The simulated apiserver's storage: pods and events by namespace and name, one global
 * monotonically increasing resourceVersion counter (like etcd's revision), and a bounded
 * history of changes per resource so watches can resume from a resourceVersion.
 */
import { randomUUID } from 'node:crypto';
import { alreadyExists, notFound } from './status.js';

/** The resources the simulator serves (and can watch). */
export type WatchedResource = 'pods' | 'events';

/** Object metadata as stored; every stored object has all of these set. */
export interface ObjectMeta {
  name: string;
  namespace: string;
  uid: string;
  resourceVersion: string;
  creationTimestamp: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  [key: string]: unknown;
}

/** A stored Kubernetes object (Pod or Event) in its JSON shape. */
export interface KubeObject {
  apiVersion?: string;
  kind?: string;
  metadata: ObjectMeta;
  [key: string]: unknown;
}

/** The watch event types a change produces. */
export type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** One change to one object, at `object.metadata.resourceVersion`. */
export interface Change {
  resource: WatchedResource;
  type: ChangeType;
  /** The object after the change (for DELETED: its last state, with the deletion's resourceVersion). */
  object: KubeObject;
  /** The object before the change (MODIFIED and DELETED only). */
  previous?: KubeObject;
  /** The global resourceVersion of this change. */
  version: number;
}

/** Called synchronously, in resourceVersion order, for every change. */
export type ChangeListener = (change: Change) => void;

/** Result of asking for the changes after a resourceVersion. */
export type HistoryAnswer =
  { kind: 'changes'; changes: Change[] } | { kind: 'expired'; oldest: number };

/** Default number of changes kept per resource for watch resumption. */
export const DEFAULT_HISTORY_LIMIT = 1000;

/** RFC 3339 with second precision, as Kubernetes writes `metav1.Time`. */
export function kubeTime(at: number = Date.now()): string {
  return new Date(at).toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

/** Pods and events with resourceVersions, history and change notification. */
export class ObjectStore {
  /**
   * Starts at a time-based value (microseconds since the epoch) instead of 0, so the versions
   * of a simulator started later are all higher: a client that kept a version from an earlier
   * run (e.g. across an `npm start` restart) gets 410 Expired and re-lists, as against a real
   * cluster whose history it missed.
   */
  private version = Date.now() * 1000;
  private readonly objects: Record<WatchedResource, Map<string, KubeObject>> = {
    pods: new Map(),
    events: new Map(),
  };
  private readonly history: Record<WatchedResource, Change[]> = { pods: [], events: [] };
  /** Highest resourceVersion dropped from each resource's history (0: nothing dropped yet). */
  private readonly compactedThrough: Record<WatchedResource, number> = {
    pods: this.version,
    events: this.version,
  };
  private readonly listeners = new Set<ChangeListener>();
  private readonly pending: Change[] = [];
  private dispatching = false;

  /** @param historyLimit changes kept per resource; older resourceVersions get 410 Expired on watch */
  constructor(private readonly historyLimit: number = DEFAULT_HISTORY_LIMIT) {}

  /** The current global resourceVersion (of the latest change; the start value before any). */
  get currentVersion(): number {
    return this.version;
  }

  /** A copy of the object, or undefined. */
  find(resource: WatchedResource, namespace: string, name: string): KubeObject | undefined {
    const found = this.objects[resource].get(key(namespace, name));
    return found && structuredClone(found);
  }

  /**
   * A copy of the object.
   * @throws ApiError 404 NotFound
   */
  get(resource: WatchedResource, namespace: string, name: string): KubeObject {
    const found = this.find(resource, namespace, name);
    if (!found) throw notFound(resource, name);
    return found;
  }

  /** Copies of every object of the resource, in one namespace or all (undefined), in creation order. */
  list(resource: WatchedResource, namespace?: string): KubeObject[] {
    const all = [...this.objects[resource].values()];
    return all
      .filter((object) => namespace === undefined || object.metadata.namespace === namespace)
      .map((object) => structuredClone(object));
  }

  /**
   * Stores a new object, assigning uid, resourceVersion and creationTimestamp (namespace and
   * name must be set), and emits ADDED.
   * @returns a copy of the stored object
   * @throws ApiError 409 AlreadyExists when the name is taken in the namespace
   */
  create(resource: WatchedResource, object: KubeObject): KubeObject {
    const { namespace, name } = object.metadata;
    const id = key(namespace, name);
    if (this.objects[resource].has(id)) throw alreadyExists(resource, name);
    const stored = structuredClone(object);
    stored.metadata.uid = randomUUID();
    stored.metadata.creationTimestamp = kubeTime();
    const version = this.nextVersion(stored);
    this.objects[resource].set(id, stored);
    const copy = structuredClone(stored);
    this.record({ resource, type: 'ADDED', object: structuredClone(stored), version });
    return copy;
  }

  /**
   * Applies `mutate` to a copy of the object, bumps its resourceVersion and emits MODIFIED.
   * @returns a copy of the updated object
   * @throws ApiError 404 NotFound
   */
  update(
    resource: WatchedResource,
    namespace: string,
    name: string,
    mutate: (object: KubeObject) => void,
  ): KubeObject {
    const id = key(namespace, name);
    const current = this.objects[resource].get(id);
    if (!current) throw notFound(resource, name);
    const next = structuredClone(current);
    mutate(next);
    next.metadata.name = current.metadata.name;
    next.metadata.namespace = current.metadata.namespace;
    next.metadata.uid = current.metadata.uid;
    const version = this.nextVersion(next);
    this.objects[resource].set(id, next);
    const copy = structuredClone(next);
    this.record({
      resource,
      type: 'MODIFIED',
      object: structuredClone(next),
      previous: current,
      version,
    });
    return copy;
  }

  /**
   * Removes the object at once (no graceful termination) and emits DELETED with a new
   * resourceVersion.
   * @returns the object's last state
   * @throws ApiError 404 NotFound
   */
  delete(resource: WatchedResource, namespace: string, name: string): KubeObject {
    const id = key(namespace, name);
    const current = this.objects[resource].get(id);
    if (!current) throw notFound(resource, name);
    this.objects[resource].delete(id);
    const last = structuredClone(current);
    const version = this.nextVersion(last);
    const copy = structuredClone(last);
    this.record({ resource, type: 'DELETED', object: last, previous: current, version });
    return copy;
  }

  /**
   * The changes of a resource after `version`, oldest first, or `expired` when changes after
   * `version` have already been dropped from the bounded history.
   */
  changesSince(resource: WatchedResource, version: number): HistoryAnswer {
    const compacted = this.compactedThrough[resource];
    if (version < compacted) {
      const oldest = this.history[resource][0]?.version ?? this.version;
      return { kind: 'expired', oldest };
    }
    return { kind: 'changes', changes: this.history[resource].filter((c) => c.version > version) };
  }

  /**
   * Subscribes to every change. Listeners may change the store; such changes are delivered to
   * all listeners after the current one, so every listener sees changes in order.
   * @returns unsubscribe
   */
  onChange(listener: ChangeListener): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private nextVersion(object: KubeObject): number {
    this.version += 1;
    object.metadata.resourceVersion = String(this.version);
    return this.version;
  }

  private record(change: Change): void {
    const history = this.history[change.resource];
    history.push(change);
    while (history.length > this.historyLimit) {
      const dropped = history.shift();
      if (dropped) this.compactedThrough[change.resource] = dropped.version;
    }
    this.pending.push(change);
    if (this.dispatching) return;
    this.dispatching = true;
    try {
      for (let next = this.pending.shift(); next; next = this.pending.shift()) {
        for (const listener of [...this.listeners]) listener(next);
      }
    } finally {
      this.dispatching = false;
    }
  }
}
