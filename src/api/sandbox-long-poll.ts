/**
 * Long-poll of a sandbox (docs/api.md, "Long-poll"): `GET /v1/sandboxes/{id}?wait=30s` with
 * `If-None-Match` answers as soon as the sandbox is past the tags it names, or at the timeout
 * with its current state. As the operation's long-poll (src/api/long-poll.ts), nothing polls: the
 * store pushes every write that can change the sandbox (src/store/sandbox-changes.ts), and a waiting
 * request reads its row (which names what to listen on), listens, reads it again, and once more
 * per wake-up. Bounded as the operation's: at most {@link MAX_LONG_POLLS} sandbox long-polls per
 * process; beyond, a plain read.
 */
import type { SandboxRecord } from '../store/index.js';
import type { AppDeps } from './deps.js';
import { MAX_LONG_POLLS } from './long-poll.js';

let holding = 0;

/** How many sandbox long-polls this process holds now (for tests). */
export function sandboxLongPollsHeld(): number {
  return holding;
}

/**
 * Reads the sandbox, then, until `settled` holds or `waitMs` has passed, waits for a change and
 * reads it again.
 * @param waitMs how long to wait, in ms (0: read once)
 * @param settled whether the sandbox as read is the answer (e.g. its tag differs from the named one)
 * @returns the sandbox as last read, or undefined when it does not exist or is someone else's
 * @throws the store's error when it cannot be reached
 */
export async function readSandboxWhenChanged(
  deps: Pick<AppDeps, 'store'>,
  tenant: string,
  id: string,
  waitMs: number,
  settled: (sandbox: SandboxRecord) => boolean,
  signal?: AbortSignal,
): Promise<SandboxRecord | undefined> {
  const read = () => deps.store.getSandbox(tenant, id);
  const first = await read();
  if (!first || waitMs <= 0 || holding >= MAX_LONG_POLLS || settled(first)) return first;
  const deadlineAtMs = Date.now() + waitMs;
  const remainingMs = () => deadlineAtMs - Date.now();
  holding += 1;
  try {
    let current = first;
    for (;;) {
      // Listen, then read: a change after the read wakes the listener, one before it is in the
      // read. The first read above only told which keys to listen on (its operation, its tenant).
      const changed = deps.store.waitForSandboxChange(current, remainingMs(), signal);
      const again = await read();
      if (!again) return current;
      current = again;
      if (settled(current) || remainingMs() <= 0 || signal?.aborted) return current;
      if (!(await changed)) return (await read()) ?? current;
    }
  } finally {
    holding -= 1;
  }
}
