/**
 * The one way tests and tooling wait for something to happen: poll what the server, the
 * cluster or the store shows until it holds. Here (floor 2, tools/) so that both the bench
 * (tools/bench/) and the suites (test/) may import it (test/layers.test.ts).
 */
import { inspect } from 'node:util';

/** Options of {@link waitUntil}. */
export interface WaitUntilOptions {
  /** How long to keep polling, in ms (default 30000). */
  timeoutMs?: number;
  /** Pause between two polls, in ms (default 100). */
  intervalMs?: number;
  /** What is awaited, for the timeout's message, e.g. `operation op_… done` (default `condition`). */
  what?: string;
}

/** A poll's answer that means "not yet". */
type NotYet = undefined | false;

/**
 * Calls `condition` (sync or async) until it returns something other than `false` or
 * `undefined`, pausing `intervalMs` between calls, and returns that value: `true` for a
 * boolean condition, the value itself for a probe (`() => found ?? undefined`).
 * The first call is immediate; the last is made after `timeoutMs` has passed, so a condition
 * that holds just in time is seen.
 * @returns the first value that is neither `false` nor `undefined`
 * @throws Error `<what> not met within <timeoutMs> ms (waited <elapsed> ms; last value: <v>)`
 *   when `timeoutMs` passes first; an error `condition` throws is thrown at once, unretried
 *   (catch inside the condition what may fail while the thing awaited is not there yet).
 */
export async function waitUntil<T>(
  condition: () => T | Promise<T>,
  { timeoutMs = 30_000, intervalMs = 100, what = 'condition' }: WaitUntilOptions = {},
): Promise<Exclude<T, NotYet>> {
  const startedAtMs = Date.now();
  for (;;) {
    const value = await condition();
    if (value !== undefined && value !== false) return value as Exclude<T, NotYet>;
    const elapsedMs = Date.now() - startedAtMs;
    if (elapsedMs > timeoutMs) {
      const last = inspect(value, { depth: 3, breakLength: Infinity });
      throw new Error(
        `${what} not met within ${timeoutMs} ms (waited ${elapsedMs} ms; last value: ${last})`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
