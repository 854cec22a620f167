/**
 * Waiting for an operation: the one place the CLI waits (`create --wait`, `wait`, `cancel --wait`,
 * `delete --wait`). Today it polls `GET /v1/operations/{id}` until the operation is done, at the
 * pace the API asks for with `Retry-After` but never faster than every 500 ms; a long-poll of the
 * API would replace the loop inside {@link waitForOperation} and nothing else.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Interrupted, type ApiClient } from './api-client.js';
import type { Operation } from './types.js';

/** The shortest pause between two polls, in ms. */
export const MIN_POLL_INTERVAL_MS = 500;

/** The pause before the next poll: `Retry-After` (seconds) when given, at least the minimum. */
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

/**
 * Waits until the operation is done.
 * @returns the finished operation, whatever its status
 * @throws ApiCallError when a read is refused (e.g. 404) or the API cannot be reached
 * @throws Interrupted when `signal` aborts (the operation is not cancelled)
 */
export async function waitForOperation(
  client: ApiClient,
  id: string,
  options: WaitOptions = {},
): Promise<Operation> {
  for (;;) {
    const response = await client.call<Operation>(
      'GET',
      `/v1/operations/${encodeURIComponent(id)}`,
    );
    options.onUpdate?.(response.body);
    if (response.body.done) return response.body;
    const delay = pollDelayMs(response.headers.get('retry-after'));
    try {
      await sleep(delay, undefined, { signal: options.signal });
    } catch (err) {
      if (options.signal?.aborted) throw new Interrupted();
      throw err;
    }
  }
}
