/**
 * What a worker's informers do when the apiserver refuses or cuts their list or watch
 * (docs/architecture.md, "The readiness watch"), as data and pure functions: which answers
 * are retried, which end the waits, which degrade, and how long to back off. No I/O, no clock
 * of their own: the caller passes the time and the random source.
 */
import { httpStatusOf } from './client.js';

/** The informers' resources. */
export type InformerResource = 'pods' | 'events';

/**
 * The rules, as a table. Source of the back-off shape: "Exponential Backoff And Jitter"
 * (full jitter), as client-go's `wait.Backoff` with jitter; `Retry-After` as kube-apiserver
 * sends it with 429 (and client-go's `rest.Request` honours it).
 */
export const WATCH_ERROR_POLICY = {
  /** Answers that re-open at once: a clean end, client-node's idle cut, a 410 (re-list first). */
  reopenPromptly: 'stream ended, idle timeout (TimeoutError), 410 Gone',
  /** Retried with capped, jittered exponential back-off; Retry-After is a floor. */
  backOffStatuses: new Set([408, 429]),
  backOffServerErrors: true, // every 5xx, and dropped connections (no status)
  /** 401: credentials may rotate or clocks skew; retried with back-off for this long, then loud. */
  unauthorizedBoundMs: 60_000,
  /**
   * 403 (RBAC): retried with back-off for this long, since a kube-apiserver that has just
   * started answers 403 until its RBAC informers have synced (src/kubernetes/apiserver-errors.ts,
   * PERMISSION_BOUND_MS). Past it, the pods informer cannot see an IP without `list`/`watch`
   * on pods, so the waits end naming the permission; the events informer degrades once per
   * worker. Both keep retrying at the back-off cap, so a later grant heals the worker.
   */
  forbidden: 403,
  forbiddenBoundMs: 60_000,
  /** Back-off: first delay (WATCH_RETRY_DELAY_MS), doubling, capped. */
  capMs: 30_000,
  /** A stream that stayed up this long resets the back-off. */
  resetAfterMs: 10_000,
} as const;

/** What to do after an informer's list or watch failed. */
export type InformerErrorDecision =
  /** Re-open at once (the stream ended or was idle-cut; a 410 re-lists). */
  | { action: 'reopen'; cause: string }
  /** Back off, then retry. `retryAfterMs` is the server's Retry-After, if it sent one. */
  | { action: 'backoff'; cause: string; status?: number; retryAfterMs?: number }
  /** 401: back off and retry until the bound, then give up loudly (the waits end). */
  | { action: 'unauthorized'; cause: string; status: 401 }
  /** 403: retried until its bound, then pods — the waits end naming the permission; events — degrade once. */
  | { action: 'forbidden'; cause: string; status: 403; message: string }
  /** Any other 4xx: a request the apiserver will never accept (treated like 403). */
  | { action: 'refused'; cause: string; status: number; message: string };

/**
 * Classifies an informer's failure.
 * @param err what ListWatch's ERROR callback received: a {@link WatchRequestError}-like error
 *   from the watch (statusCode, retryAfterMs, message), a client-node ApiException from the
 *   list (code, headers, body), a DOMException (TimeoutError, AbortError), or a network error
 * Never throws.
 */
export function classifyInformerError(err: unknown): InformerErrorDecision {
  if (err === null || err === undefined) return { action: 'reopen', cause: 'ended' };
  // Before statuses: a DOMException's legacy numeric `code` (23 for TimeoutError) is no HTTP status.
  if ((err as { name?: string }).name === 'TimeoutError') {
    return { action: 'reopen', cause: 'timeout' };
  }
  if (err instanceof DOMException) return { action: 'backoff', cause: 'dropped' };
  const status = httpStatusOf(err);
  if (status === undefined) return { action: 'backoff', cause: 'dropped' };
  const cause = `status-${status}`;
  if (status === 410) return { action: 'reopen', cause };
  if (status === 401) return { action: 'unauthorized', cause, status };
  const retryAfterMs = retryAfterMsOf(err);
  if (
    WATCH_ERROR_POLICY.backOffStatuses.has(status as 408 | 429) ||
    (WATCH_ERROR_POLICY.backOffServerErrors && status >= 500) ||
    status < 400
  ) {
    return { action: 'backoff', cause, status, ...(retryAfterMs ? { retryAfterMs } : {}) };
  }
  const message = messageOf(err) ?? `HTTP ${status}`;
  if (status === WATCH_ERROR_POLICY.forbidden)
    return { action: 'forbidden', cause, status, message };
  return { action: 'refused', cause, status, message };
}

/** Options of {@link backoffDelayMs}. */
export interface BackoffOptions {
  /** First delay's upper bound, in ms (WATCH_RETRY_DELAY_MS). */
  baseMs: number;
  /** Largest delay, in ms (default {@link WATCH_ERROR_POLICY.capMs}). */
  capMs?: number;
}

/**
 * Capped exponential back-off with full jitter: a delay drawn uniformly from
 * [0, min(cap, base · 2^failures)), never below the server's Retry-After.
 * @param failures consecutive failures before this one (0 for the first)
 * @param random a source of [0, 1) (Math.random, or a seeded one in tests)
 * @param retryAfterMs the server's Retry-After in ms, if any: a floor for the delay
 * @returns the delay in ms (integer, ≥ 0)
 */
export function backoffDelayMs(
  failures: number,
  options: BackoffOptions,
  random: () => number,
  retryAfterMs?: number,
): number {
  const capMs = options.capMs ?? WATCH_ERROR_POLICY.capMs;
  const ceiling = Math.min(capMs, options.baseMs * 2 ** Math.min(Math.max(failures, 0), 30));
  const jittered = Math.floor(random() * ceiling);
  return Math.max(jittered, retryAfterMs ?? 0);
}

/** The Retry-After an error carries, in ms: `retryAfterMs`, a header, or the Status body. */
function retryAfterMsOf(err: unknown): number | undefined {
  const e = err as {
    retryAfterMs?: unknown;
    headers?: Record<string, string>;
    body?: unknown;
  };
  if (typeof e.retryAfterMs === 'number') return e.retryAfterMs;
  const header = e.headers?.['retry-after'] ?? e.headers?.['Retry-After'];
  const seconds = Number(header);
  if (header !== undefined && Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const body = parseBody(e.body) as { details?: { retryAfterSeconds?: unknown } } | undefined;
  const fromBody = body?.details?.retryAfterSeconds;
  return typeof fromBody === 'number' ? fromBody * 1000 : undefined;
}

/** The apiserver's message (a Status body's `message`), if the error carries one. */
function messageOf(err: unknown): string | undefined {
  const e = err as { statusMessage?: unknown; body?: unknown; message?: unknown };
  if (typeof e.statusMessage === 'string' && e.statusMessage) return e.statusMessage;
  const body = parseBody(e.body) as { message?: unknown } | undefined;
  if (typeof body?.message === 'string' && body.message) return body.message;
  return typeof e.message === 'string' && e.message ? e.message : undefined;
}

function parseBody(body: unknown): unknown {
  if (typeof body !== 'string') return body;
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}
