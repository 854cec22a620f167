/**
 * The store's writes of a sandbox while it lives (Store.setExpireTime, updateLabels, recordPod):
 * each one transaction that locks the sandbox first (src/store/fencing.ts) and wakes the
 * waiters of what it changed.
 */
import { lockSandbox } from './fencing.js';
import { sandboxChangeKey } from './sandbox-changes.js';
import { setCreatePath } from './operations.js';
import { selectSandbox, setPod, setExpireTime } from './sandboxes.js';
import { MAX_LABELS, sameLabels, type Labels } from '../../contract/index.js';
import { replaceLabels } from './labels.js';
import type { Kysely, Selectable } from 'kysely';
import type { Database, SandboxesTable } from './schema.js';
import type { RecordPodInput, Store } from './types.js';
import type { StoreContext } from './store-context.js';

/** The sandbox writes of {@link Store}, over the store's shared context. */
export function sandboxWrites(
  ctx: StoreContext,
): Pick<Store, 'setExpireTime' | 'updateLabels' | 'recordPod'> {
  const { dialect, now, writing } = ctx;
  return {
    setExpireTime(tenant, sandboxId, expireTime) {
      return writing(async (trx, changed) => {
        const wrote = await setExpireTime(trx, { sandboxId, tenant }, expireTime, now());
        if (wrote) changed.add(sandboxChangeKey(sandboxId));
        return wrote ? selectSandbox(trx, sandboxId, tenant) : undefined;
      });
    },
    updateLabels(tenant, sandboxId, update) {
      return writing(async (trx, changed) => {
        await lockSandbox(trx, dialect, sandboxId);
        const current = await selectSandbox(trx, sandboxId, tenant);
        if (!current) return { kind: 'not_found' as const };
        const labels = nextLabels(current.labels, update);
        const count = Object.keys(labels).length;
        if (count > MAX_LABELS) return { kind: 'too_many' as const, count };
        if (sameLabels(labels, current.labels))
          return { kind: 'updated' as const, sandbox: current };
        await replaceLabels(trx, current, labels, now());
        changed.add(sandboxChangeKey(sandboxId));
        const sandbox = await selectSandbox(trx, sandboxId, tenant);
        if (!sandbox) throw new Error(`sandbox ${sandboxId} vanished while its labels changed`);
        return { kind: 'updated' as const, sandbox };
      });
    },
    recordPod(input) {
      return writing(async (trx, changed) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        return (await recordPodIn(ctx, trx, changed, input)) !== undefined;
      });
    },
  };
}

/**
 * {@link Store.recordPod}'s writes inside the caller's transaction, which holds the sandbox's
 * lock (src/store/fencing.ts): the pod, fenced by the execution; when it wrote, the operation's
 * phase `waiting_for_ip` and its create path. Store.markSandboxRunning runs it too, for a pod
 * recorded in the same transaction.
 * @param changed the change keys to wake once the transaction commits
 * @returns the sandbox's row as the write left it, or undefined when it wrote nothing
 */
export async function recordPodIn(
  ctx: StoreContext,
  trx: Kysely<Database>,
  changed: Set<string>,
  input: RecordPodInput,
): Promise<Selectable<SandboxesTable> | undefined> {
  const at = ctx.now();
  const row = await setPod(trx, input, { name: input.podName, uid: input.podUid }, at);
  if (row) {
    const transition = { phase: 'waiting_for_ip' as const, runId: input.runId };
    ctx.note(changed, await ctx.advanceIn(trx, input.operationId, transition, at));
    if (input.operationId && input.createPath) {
      await setCreatePath(trx, input.operationId, input.createPath);
      changed.add(input.operationId);
    }
  }
  return row;
}
/**
 * A sandbox's labels after an update (Store.updateLabels): `labels` itself without `keys`, else
 * `current` with each key of `keys` set from `labels`, or removed when `labels` has none.
 */
export function nextLabels(
  current: Labels,
  update: { labels: Labels; keys?: readonly string[] },
): Record<string, string> {
  if (update.keys === undefined) return { ...update.labels };
  const next: Record<string, string> = { ...current };
  for (const key of update.keys) {
    if (Object.hasOwn(update.labels, key)) next[key] = update.labels[key] as string;
    else delete next[key];
  }
  return next;
}
