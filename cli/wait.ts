/**
 * Waiting for an operation: poll `GET /v1/operations/{id}` until it is done, at the pace the API
 * asks for with `Retry-After` but never faster than every 500 ms.
 */
import type { ApiClient } from './api-client.js';
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

/**
 * Polls until the operation is done.
 * @param onUpdate called with every answer (e.g. to show the phase)
 * @returns the finished operation, whatever its status
 * @throws ApiCallError when a poll is refused (e.g. 404) or the API cannot be reached
 */
export async function waitForOperation(
  client: ApiClient,
  id: string,
  onUpdate: (operation: Operation) => void = () => undefined,
): Promise<Operation> {
  for (;;) {
    const response = await client.call<Operation>(
      'GET',
      `/v1/operations/${encodeURIComponent(id)}`,
    );
    onUpdate(response.body);
    if (response.body.done) return response.body;
    const delay = pollDelayMs(response.headers.get('retry-after'));
    await new Promise((resolve) => setTimeout(resolve, delay));
  }
}
