/**
 * One Kubernetes watch kept open until stopped: re-opened after a delay when it ends or fails
 * for a passing reason, given up (degraded) when the apiserver refuses it outright.
 * Built on `@kubernetes/client-node`'s `Watch`; no other HTTP.
 */
import type { KubeConfig } from '@kubernetes/client-node';
import { Watch } from '@kubernetes/client-node';
import { httpStatusOf } from './client.js';

/**
 * Which watch failures re-open and which degrade (docs/architecture.md, "The readiness watch"). A
 * stream that ends,
 * times out (client-node ends a watch after 30 s of silence with a TimeoutError), or drops
 * its connection re-opens too: those arrive without a status.
 */
export const WATCH_ERROR_POLICY = {
  reopenStatuses: new Set([408, 410, 429]),
  reopenServerErrors: true, // every 5xx
  degrade: 'any other 4xx (401, 403, 404, …): stop this watch, warn once, keep waiting',
} as const;

/** Why a watch is being opened. */
export type WatchOpenCause = 'initial' | 'ended' | 'timeout' | 'dropped' | `status-${number}`;

/** What the loop decided about a watch that ended or failed. */
export interface WatchEndDecision {
  action: 'reopen' | 'degrade';
  cause: Exclude<WatchOpenCause, 'initial'>;
  status?: number;
}

/**
 * Classifies how a watch ended.
 * @param err what client-node's `done` callback received (null for a clean end), or an in-stream
 *   `ERROR` event's Status object
 */
export function classifyWatchEnd(err: unknown): WatchEndDecision {
  if (err === null || err === undefined) return { action: 'reopen', cause: 'ended' };
  // Checked before statuses: a DOMException's legacy numeric `code` (23 for a TimeoutError)
  // is no HTTP status.
  if ((err as { name?: string }).name === 'TimeoutError')
    return { action: 'reopen', cause: 'timeout' };
  if (err instanceof DOMException) return { action: 'reopen', cause: 'dropped' };
  const status = httpStatusOf(err);
  if (status !== undefined) {
    const reopen =
      WATCH_ERROR_POLICY.reopenStatuses.has(status) ||
      (WATCH_ERROR_POLICY.reopenServerErrors && status >= 500);
    if (reopen || status < 400) return { action: 'reopen', cause: `status-${status}`, status };
    return { action: 'degrade', cause: `status-${status}`, status };
  }
  return { action: 'reopen', cause: 'dropped' };
}

/** Options for {@link WatchLoop}. */
export interface WatchLoopOptions {
  kubeConfig: KubeConfig;
  /** API path without query, e.g. `/api/v1/namespaces/sandboxes/events`. */
  path: string;
  /** Query of each open (called at every open, so it may change between opens). */
  query: () => Record<string, string>;
  /**
   * Runs before each open (e.g. a list that re-establishes state after a 410); when it throws,
   * the open counts as failed with that error and the usual policy applies.
   */
  prepare?: () => Promise<void>;
  /** Called for ADDED, MODIFIED and DELETED events of the current open only. */
  onEvent: (type: string, object: unknown) => void;
  /** Delay before re-opening, in ms. */
  retryDelayMs: number;
  /** Called once when the watch is refused outright; the loop then stops. */
  onDegrade: (decision: WatchEndDecision, err: unknown) => void;
  /** Called before every open, with the reason (for logs and metrics). */
  onOpen?: (cause: WatchOpenCause) => void;
  /** Called when a watch ends and will be re-opened, before the delay. */
  onReopenScheduled?: (decision: WatchEndDecision) => void;
  /** Called when a stream is established (HTTP 200) and when that stream closes. */
  onStreamChange?: (open: boolean) => void;
}

/**
 * Holds one watch open until {@link WatchLoop.stop}. At most one stream is open at a time;
 * callbacks of a superseded stream are ignored.
 */
export class WatchLoop {
  private readonly watch: Watch;
  private attempt = 0;
  private stopped = false;
  private controller: AbortController | undefined;
  private retryTimer: NodeJS.Timeout | undefined;
  private streamOpen = false;

  constructor(private readonly options: WatchLoopOptions) {
    this.watch = new Watch(options.kubeConfig);
  }

  /** Opens the first watch. */
  start(): void {
    this.open('initial');
  }

  /** Aborts the open stream and any pending re-open. Idempotent. */
  stop(): void {
    this.stopped = true;
    this.attempt += 1;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.closeStream();
  }

  private closeStream(): void {
    this.controller?.abort();
    this.controller = undefined;
    if (this.streamOpen) {
      this.streamOpen = false;
      this.options.onStreamChange?.(false);
    }
  }

  private open(cause: WatchOpenCause): void {
    if (this.stopped) return;
    const attempt = ++this.attempt;
    const current = (): boolean => !this.stopped && attempt === this.attempt;
    this.options.onOpen?.(cause);
    const start = async (): Promise<AbortController | undefined> => {
      await this.options.prepare?.();
      if (!current()) return undefined;
      return this.watch.watch(
        this.options.path,
        this.options.query(),
        (type, object) => {
          if (!current()) return;
          if (type === 'ERROR') this.ended(attempt, object);
          else if (type === 'BOOKMARK') return;
          else this.options.onEvent(type, object);
        },
        (err: unknown) => {
          if (current()) this.ended(attempt, err ?? null);
        },
      );
    };
    start().then(
      (controller) => {
        if (!controller) return;
        if (!current()) {
          controller.abort(); // stopped or ended while the request was in flight
          return;
        }
        this.controller = controller;
        this.streamOpen = true;
        this.options.onStreamChange?.(true);
      },
      (err: unknown) => {
        if (current()) this.ended(attempt, err);
      },
    );
  }

  private ended(attempt: number, err: unknown): void {
    if (this.stopped || attempt !== this.attempt) return;
    this.attempt += 1; // ignore anything more from this stream
    this.closeStream();
    const decision = classifyWatchEnd(err);
    if (decision.action === 'degrade') {
      this.stopped = true;
      this.options.onDegrade(decision, err);
      return;
    }
    this.options.onReopenScheduled?.(decision);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.open(decision.cause);
    }, this.options.retryDelayMs);
  }
}
