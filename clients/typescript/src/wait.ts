/**
 * Waiting for an operation: long-polls `GET /v1/operations/{id}?wait=30s` (docs/api.md,
 * "Long-poll") with `If-None-Match` naming the `ETag` of the answer before. The API answers the
 * moment the operation is past that tag (at once when it changed between two long-polls), or
 * after the wait with 304 (the operation as last seen), and the loop asks again until the
 * operation is done.
 * Nothing sleeps between requests, except after an answer that came back at once without a
 * change (an API or proxy that ignores `wait`), which is followed by a pause of `Retry-After`,
 * at least {@link MIN_POLL_INTERVAL_MS}.
 */
import { RequestAbortedError } from './errors.js';
import type { Operation } from './types.js';

/** How long one long-poll asks the API to wait for a change, in seconds. */
export const LONG_POLL_WAIT_S = 30;

/** The shortest pause after an immediate, unchanged answer, in ms. */
export const MIN_POLL_INTERVAL_MS = 500;

/** The pause after an immediate, unchanged answer: `Retry-After` (seconds), at least the minimum. */
export function pollDelayMs(retryAfter: string | null): number {
  const seconds = retryAfter === null ? NaN : Number(retryAfter);
  return Number.isFinite(seconds) && seconds > 0
    ? Math.max(MIN_POLL_INTERVAL_MS, seconds * 1000)
    : MIN_POLL_INTERVAL_MS;
}

/** Options of a wait. */
export interface WaitOptions {
  /** Called with every answer, the last (done) one included, e.g. to show the phase. */
  onUpdate?: (operation: Operation) => void;
  /** Stops the wait; the operation itself goes on. */
  signal?: AbortSignal;
}

/** An operation as last read, with the `ETag` it was answered with (null when none was sent). */
export interface SeenOperation {
  operation: Operation;
  etag: string | null;
}

/** One answer of a read: the operation, and the answer's `Retry-After` and `ETag`. */
export interface OperationAnswer extends SeenOperation {
  retryAfter: string | null;
}

/**
 * One read of the operation: with `waitS`, a long-poll; with `seen`, conditional on its tag
 * (`If-None-Match`), so the API answers at once when the operation is already past it.
 */
export type OperationRead = (
  waitS: number | undefined,
  seen: SeenOperation | undefined,
) => Promise<OperationAnswer>;

function stateOf(operation: Operation): string {
  return `${operation.status}/${operation.phase}/${operation.done}`;
}

/**
 * Reads the operation until it is done: a plain read first, then long-polls.
 * @returns the finished operation, whatever its status (a failed create is returned, not thrown)
 * @throws DurableSandboxError when a read is refused (e.g. 404) or the API cannot be reached
 * @throws RequestAbortedError when `signal` aborts (the operation is not cancelled)
 */
export async function waitForOperation(
  read: OperationRead,
  options: WaitOptions = {},
): Promise<Operation> {
  let previous: string | undefined;
  let seen: SeenOperation | undefined;
  for (;;) {
    const askedAtMs = Date.now();
    const { operation, retryAfter, etag } = await read(
      previous === undefined ? undefined : LONG_POLL_WAIT_S,
      seen,
    );
    seen = { operation, etag };
    options.onUpdate?.(operation);
    if (operation.done) return operation;
    const state = stateOf(operation);
    const answeredAtOnce = Date.now() - askedAtMs < MIN_POLL_INTERVAL_MS;
    if (previous !== undefined && state === previous && answeredAtOnce) {
      await pause(pollDelayMs(retryAfter), options.signal);
    }
    previous = state;
  }
}

/**
 * Sleeps `ms`, or until `signal` aborts.
 * @throws RequestAbortedError when `signal` aborts (at once when it already has)
 */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(new RequestAbortedError(signal.reason));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new RequestAbortedError(signal?.reason));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
