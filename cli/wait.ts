/**
 * Waiting for an operation: the one place the CLI waits (`create --wait`, `wait`, `cancel --wait`,
 * `delete --wait`). It long-polls `GET /v1/operations/{id}?wait=30s`: the API answers the moment
 * the operation changes (each change is shown through `onUpdate`) or after 30 s with its current
 * state, and the CLI asks again until the operation is done. Nothing sleeps between requests,
 * except after an answer that came back at once without a change (an API that ignores `wait`),
 * which is followed by a pause of at least {@link MIN_POLL_INTERVAL_MS}.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Interrupted, type ApiClient } from './api-client.js';
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

/** Options of {@link waitForOperation}. */
export interface WaitOptions {
  /** Called with every answer (e.g. to show the phase). */
  onUpdate?: (operation: Operation) => void;
  /** Stops the wait (Ctrl-C); the operation itself goes on. */
  signal?: AbortSignal;
}

function stateOf(operation: Operation): string {
  return `${operation.status}/${operation.phase}/${operation.done}`;
}

/**
 * Waits until the operation is done, one long-poll at a time.
 * @returns the finished operation, whatever its status
 * @throws ApiCallError when a read is refused (e.g. 404) or the API cannot be reached
 * @throws Interrupted when `signal` aborts (the operation is not cancelled)
 */
export async function waitForOperation(
  client: ApiClient,
  id: string,
  options: WaitOptions = {},
): Promise<Operation> {
  const path = `/v1/operations/${encodeURIComponent(id)}`;
  let previous: string | undefined;
  for (;;) {
    const askedAtMs = Date.now();
    const response = await client.call<Operation>(
      'GET',
      previous === undefined ? path : `${path}?wait=${LONG_POLL_WAIT_S}s`,
    );
    options.onUpdate?.(response.body);
    if (response.body.done) return response.body;
    const state = stateOf(response.body);
    const answeredAtOnce = Date.now() - askedAtMs < MIN_POLL_INTERVAL_MS;
    if (previous !== undefined && state === previous && answeredAtOnce) {
      try {
        await sleep(pollDelayMs(response.headers.get('retry-after')), undefined, {
          signal: options.signal,
        });
      } catch (err) {
        if (options.signal?.aborted) throw new Interrupted();
        throw err;
      }
    }
    previous = state;
  }
}
