/**
 * Watch streams: `?watch=true` responses that stay open and carry one JSON object per line,
 * `{"type":"ADDED|MODIFIED|DELETED|ERROR","object":{...}}`, with the apiserver's semantics
 * (Kubernetes API concepts, "Efficient detection of changes"):
 * - resourceVersion unset or "0": a synthetic ADDED for every matching object, then live changes;
 * - resourceVersion N > 0: every change after N, then live changes; N older than the kept
 *   history gets an in-stream ERROR with a 410 Expired Status, then the stream ends;
 * - with a selector, an object that starts matching arrives as ADDED and one that stops
 *   matching as DELETED;
 * - `allowWatchBookmarks=true`: one BOOKMARK (only `metadata.resourceVersion`, the store's
 *   current version) right after the initial state or history, as a real kube-apiserver sends
 *   one within milliseconds of the watch opening (checked in test/real-apiserver.test.ts),
 *   and one more right before a `timeoutSeconds` end.
 */
import type { ServerResponse } from 'node:http';
import type { Selector } from './selectors.js';
import { tooOldResourceVersion, type Status } from './status.js';
import type { Change, KubeObject, ObjectStore, WatchedResource } from './store.js';

/** What a watch asks for. */
export interface WatchRequest {
  resource: WatchedResource;
  /** undefined: every namespace */
  namespace?: string;
  selector: Selector;
  /** undefined or 0: start with ADDED for the current state; N > 0: changes after N */
  resourceVersion?: number;
  /** End the stream (cleanly) after this many seconds. */
  timeoutSeconds?: number;
  /** Send headers but never any event (a scripted silent watch). */
  silent: boolean;
  /** `allowWatchBookmarks=true`: send a BOOKMARK after the initial state or history. */
  bookmarks?: boolean;
  /** Turns an object into what goes on the wire (the object itself, or a Table for kubectl). */
  encode: (object: KubeObject) => unknown;
}

type EventType = Change['type'] | 'ERROR' | 'BOOKMARK';

const KIND: Record<WatchedResource, string> = { pods: 'Pod', events: 'Event' };

class WatchStream {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    readonly request: WatchRequest,
    private readonly res: ServerResponse,
    onClose: (stream: WatchStream) => void,
    private readonly currentVersion: () => number,
  ) {
    res.on('close', () => {
      if (this.timer) clearTimeout(this.timer);
      onClose(this);
    });
    if (request.timeoutSeconds !== undefined && request.timeoutSeconds > 0) {
      this.timer = setTimeout(() => this.endWithBookmark(), request.timeoutSeconds * 1000);
    }
  }

  send(type: EventType, object: unknown): void {
    if (this.request.silent || this.res.writableEnded || this.res.destroyed) return;
    this.res.write(`${JSON.stringify({ type, object })}\n`);
  }

  /** Delivers a store change if it concerns this watch. */
  deliver(change: Change): void {
    const { request } = this;
    if (change.resource !== request.resource) return;
    const namespace = change.object.metadata.namespace;
    if (request.namespace !== undefined && namespace !== request.namespace) return;
    const now = request.selector.matches(change.object);
    const was = change.previous !== undefined && request.selector.matches(change.previous);
    let type: Change['type'] | undefined;
    if (change.type === 'ADDED') type = now ? 'ADDED' : undefined;
    else if (change.type === 'DELETED') type = was || now ? 'DELETED' : undefined;
    else if (now) type = was ? 'MODIFIED' : 'ADDED';
    else if (was) type = 'DELETED';
    if (type) this.send(type, request.encode(change.object));
  }

  /**
   * The end of `timeoutSeconds`: with bookmarks, one last BOOKMARK at the store's current
   * version first, as kube-apiserver's watch cache sends one to a watcher shortly before its
   * deadline, so the client resumes from a version that is not stale.
   */
  private endWithBookmark(): void {
    if (this.request.bookmarks) this.send('BOOKMARK', this.bookmark());
    this.end();
  }

  /** A BOOKMARK object: only the kind and `metadata.resourceVersion` (current version). */
  bookmark(): unknown {
    return {
      kind: KIND[this.request.resource],
      apiVersion: 'v1',
      metadata: { resourceVersion: String(this.currentVersion()) },
    };
  }

  /** Sends an in-stream ERROR with the Status, then ends the stream. */
  fail(status: Status): void {
    this.send('ERROR', status);
    this.end();
  }

  end(): void {
    if (this.timer) clearTimeout(this.timer);
    if (!this.res.writableEnded) this.res.end();
  }

  drop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.res.destroy();
  }
}

/** Every open watch stream, fed from the store's changes. */
export class WatchRegistry {
  private readonly streams = new Set<WatchStream>();
  private readonly unsubscribe: () => void;

  constructor(private readonly store: ObjectStore) {
    this.unsubscribe = store.onChange((change) => {
      for (const stream of this.streams) stream.deliver(change);
    });
  }

  /**
   * Answers the request as a watch: 200 with headers flushed at once, then the initial
   * state or the history after `resourceVersion`, then live changes until the stream ends.
   */
  open(res: ServerResponse, request: WatchRequest): void {
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'Cache-Control': 'no-cache, private',
    });
    res.flushHeaders();
    const stream = new WatchStream(
      request,
      res,
      (closed) => this.streams.delete(closed),
      () => this.store.currentVersion,
    );
    this.streams.add(stream);
    if (request.silent) return;
    const from = request.resourceVersion ?? 0;
    if (from <= 0) {
      for (const object of this.store.list(request.resource, request.namespace)) {
        if (request.selector.matches(object)) stream.send('ADDED', request.encode(object));
      }
    } else {
      const history = this.store.changesSince(request.resource, from);
      if (history.kind === 'expired') {
        stream.fail(tooOldResourceVersion(from, history.oldest));
        return;
      }
      for (const change of history.changes) stream.deliver(change);
    }
    if (request.bookmarks) {
      stream.send('BOOKMARK', {
        kind: KIND[request.resource],
        apiVersion: 'v1',
        metadata: { resourceVersion: String(this.store.currentVersion) },
      });
    }
  }

  /** Number of open streams, of one resource or all. */
  count(resource?: WatchedResource): number {
    return this.select(resource).length;
  }

  /** Ends (cleanly) every open stream of the resource, or all. */
  end(resource?: WatchedResource): void {
    for (const stream of this.select(resource)) stream.end();
  }

  /** Destroys the connection of every open stream of the resource, or all. */
  drop(resource?: WatchedResource): void {
    for (const stream of this.select(resource)) stream.drop();
  }

  /** Sends an in-stream 410 Expired ERROR, then ends, on every open stream of the resource. */
  expire(resource?: WatchedResource): void {
    // Everything up to now counts as compacted, so the client must re-list (or re-watch from 0).
    const oldest = this.store.currentVersion + 1;
    for (const stream of this.select(resource)) {
      stream.fail(tooOldResourceVersion(stream.request.resourceVersion ?? 0, oldest));
    }
  }

  /** Ends every stream and stops listening to the store. */
  close(): void {
    this.unsubscribe();
    this.end();
  }

  private select(resource?: WatchedResource): WatchStream[] {
    return [...this.streams].filter(
      (s) => resource === undefined || s.request.resource === resource,
    );
  }
}
