/**
 * Long-poll of an operation (docs/api.md, "Operations"): `GET /v1/operations/{id}?wait=30s` answers
 * as soon as the operation's row changes, or at the timeout with its current state. The wake-up
 * is pushed by the store (store/operation-notifier.ts: in-process for the embedded stack,
 * PostgreSQL LISTEN/NOTIFY across API replicas and workers), so nothing polls: a waiting request
 * holds one listener and a timer, and reads its row once more when woken.
 *
 * Waits are bounded per process ({@link MAX_LONG_POLLS}); a request beyond the bound is answered
 * at once with the current state, as a plain GET.
 */
import type { AppDeps } from './deps.js';
import type { Operation } from './operations.js';
import { readOperation } from './operations.js';

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
  const first = await readOperation(deps, tenant, id);
  if (!first || first.done || waitMs <= 0 || holding >= MAX_LONG_POLLS) return first;
  const settled =
    options.until ?? ((operation: Operation) => stateOf(operation) !== stateOf(first));
  if (settled(first)) return first;
  const deadlineAtMs = Date.now() + waitMs;
  holding += 1;
  try {
    let current = first;
    for (;;) {
      const remainingMs = deadlineAtMs - Date.now();
      if (remainingMs <= 0 || options.signal?.aborted) return current;
      // Listen first, then read: a change between the two is never missed.
      const changed = deps.store.waitForOperationChange(id, remainingMs, options.signal);
      const reread = await readOperation(deps, tenant, id);
      if (!reread) return current;
      current = reread;
      if (current.done || settled(current)) return current;
      if (!(await changed)) return (await readOperation(deps, tenant, id)) ?? current;
      const woken = await readOperation(deps, tenant, id);
      if (!woken) return current;
      current = woken;
      if (current.done || settled(current)) return current;
    }
  } finally {
    holding -= 1;
  }
}

/**
 * Parses `wait` (`30s`, `1500ms`, or a number of seconds) into ms, capped at {@link MAX_WAIT_MS}.
 * @returns undefined when the value is not a duration
 */
export function parseWait(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const match = /^(\d{1,6})(ms|s)?$/.exec(value.trim());
  if (!match) return undefined;
  const amount = Number(match[1]);
  const ms = match[2] === 'ms' ? amount : amount * 1000;
  return Math.min(ms, MAX_WAIT_MS);
}
