/**
 * Reading the event feed (`GET /v1/events`, docs/webhooks.md, "The event feed"), with its long-poll: `wait=30s`
 * answers as soon as an event past the cursor exists, else an empty page at the timeout. As the
 * operation long-poll (src/api/long-poll.ts), the wake-up is pushed by the store
 * (src/store/operation-notifier.ts, under the key of the tenant's feed): a waiting request holds one
 * listener and a timer and reads the store once more per wake-up, never on a clock.
 */
import type { FeedEventRecord, FeedQuery } from '../store/index.js';
import type { AppDeps } from './deps.js';
import { MAX_LONG_POLLS } from './long-poll.js';

let holding = 0;

/**
 * Reads the tenant's events matching `query`; when there are none and `waitMs` is positive,
 * waits until one is written (then reads again) or `waitMs` passes.
 * @param waitMs how long to wait for an event, in ms (0: read once)
 * @returns the events, oldest first; [] at the timeout or when `signal` aborts (one read of the
 *   store per wake-up, none on a clock)
 * @throws the store's error when it cannot be reached
 */
export async function readEventsWhenAvailable(
  deps: Pick<AppDeps, 'store'>,
  tenant: string,
  query: FeedQuery,
  waitMs: number,
  signal?: AbortSignal,
): Promise<FeedEventRecord[]> {
  const read = () => deps.store.events.list(tenant, query);
  if (waitMs <= 0 || holding >= MAX_LONG_POLLS) return read();
  const deadlineAtMs = Date.now() + waitMs;
  const remainingMs = () => deadlineAtMs - Date.now();
  const done = new AbortController();
  const listening = signal ? AbortSignal.any([signal, done.signal]) : done.signal;
  holding += 1;
  try {
    // Listen first, then read: an event written after the read wakes the listener, one before
    // it is in the read.
    let written = deps.store.events.waitForEvent(tenant, remainingMs(), listening);
    let events = await read();
    while (events.length === 0) {
      if (remainingMs() <= 0 || signal?.aborted) return events;
      // At the timeout, an empty page: the caller's cursor stays where it was, so nothing is missed.
      if (!(await written)) return [];
      written = deps.store.events.waitForEvent(tenant, remainingMs(), listening);
      events = await read();
    }
    return events;
  } finally {
    done.abort();
    holding -= 1;
  }
}
