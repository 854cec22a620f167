/**
 * Long-poll of an operation (docs/api.md, "Operations"): `GET /v1/operations/{id}?wait=30s` answers
 * as soon as the operation's row changes, or at the timeout with its current state. The wake-up
 * is pushed by the store (src/store/operation-notifier.ts: in-process for the embedded stack,
 * PostgreSQL LISTEN/NOTIFY across API replicas and workers), so nothing polls: a waiting request
 * holds one listener and a timer, and reads its row once more when woken.
 *
 * A caller that names the version it last saw (`If-None-Match`, src/api/handlers/operation-routes.ts)
 * passes `until` "the tag differs from the named one", so a change that landed between its GET and
 * its long-poll is answered at once instead of at the next change.
 *
 * Waits are bounded per process ({@link MAX_LONG_POLLS}); a request beyond the bound is answered
 * at once with the current state, as a plain GET.
 */
import type { AppDeps } from './deps.js';
import type { Operation } from './operation-read.js';
import { readOperation } from './operation-read.js';

/** Longest `wait` a caller may ask for, in ms (60 s). */
export const MAX_WAIT_MS = 60_000;

/** Most long-polls one API process holds at once. */
export const MAX_LONG_POLLS = 1_000;

let holding = 0;

/** How many long-polls this process holds now (for tests and metrics). */
export function longPollsHeld(): number {
  return holding;
}

/** What makes an operation "changed" for a waiter: its status, phase, or done. */
function stateOf(operation: Operation): string {
  return `${operation.status}/${operation.phase}/${operation.done}`;
}

/**
 * Reads the operation, then, while it is not done and `waitMs` has not passed, waits for its
 * next change and answers with it.
 * @param waitMs how long to wait for a change, in ms (0: read once)
 * @param predicate when given, waits (through several changes) until it holds instead
 * @returns the operation, or undefined when it does not exist or is someone else's
 * @throws the client's or the store's error when either cannot be reached
 */
export async function readOperationWhenChanged(
  deps: Pick<AppDeps, 'temporal' | 'store' | 'config'>,
  tenant: string,
  id: string,
  waitMs: number,
  options: { signal?: AbortSignal; until?: (operation: Operation) => boolean } = {},
): Promise<Operation | undefined> {
  if (waitMs <= 0 || holding >= MAX_LONG_POLLS) return readOperation(deps, tenant, id);
  const deadlineAtMs = Date.now() + waitMs;
  const remainingMs = () => deadlineAtMs - Date.now();
  // Ends the listener still registered when this returns (a change it no longer waits for).
  const done = new AbortController();
  const signal = options.signal ? AbortSignal.any([options.signal, done.signal]) : done.signal;
  const read = () => readOperation(deps, tenant, id);
  holding += 1;
  try {
    // Listen first, then read: a change after the read wakes the listener, one before it is in
    // the read. Each wake listens again before it reads, so a wait costs one read per change.
    let changed = deps.store.waitForOperationChange(id, remainingMs(), signal);
    const first = await read();
    if (!first || first.done) return first;
    const settled =
      options.until ?? ((operation: Operation) => stateOf(operation) !== stateOf(first));
    let current = first;
    while (!settled(current)) {
      if (remainingMs() <= 0 || options.signal?.aborted) return current;
      if (!(await changed)) return (await read()) ?? current;
      changed = deps.store.waitForOperationChange(id, remainingMs(), signal);
      const woken = await read();
      if (!woken) return current;
      current = woken;
      if (current.done) return current;
    }
    return current;
  } finally {
    done.abort();
    holding -= 1;
  }
}

export function parseWait(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d{1,6})(ms|s)?$/.exec(value.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const ms = match[2] === 'ms' ? amount : amount * 1000;
  return Math.min(ms, MAX_WAIT_MS);
}
