/**
 * The store's marking of sandboxes whose pod is gone (Store.markRunningSandboxesLost,
 * markSandboxLost): each lost sandbox's executions retired and its `sandbox.lost` event kept in
 * the same transaction, then the tenant's event feed woken.
 */
import type { Kysely } from 'kysely';
import { retireActiveExecutions } from './executions.js';
import { lockSandbox } from './fencing.js';
import { feedChangeKey, insertEvent, sandboxEventBody, webhookEventId } from './event-feed.js';
import { selectSandboxRow, toRecord, setRunningLost, setLost } from './sandboxes.js';
import { POD_LOST } from '../../contract/index.js';
import type { Database } from './schema.js';
import type { Store } from './types.js';
import type { StoreContext } from './store-context.js';

/** The lost-sandbox writes of {@link Store}, over the store's shared context. */
export function lostSandboxWrites(
  ctx: StoreContext,
): Pick<Store, 'markRunningSandboxesLost' | 'markSandboxLost'> {
  const { db, dialect, now, notifier } = ctx;

  /**
   * Keeps the `sandbox.lost` event of a sandbox just marked lost, in the same transaction, so
   * the feed has it whatever happens next (its webhooks are signalled by the caller's process:
   * src/activities/webhook-delivery.ts `announceEvent`).
   * @returns the sandbox's tenant (undefined when the row is gone)
   */
  async function recordLostEvent(
    trx: Kysely<Database>,
    sandboxId: string,
    at: string,
  ): Promise<string | undefined> {
    const row = await selectSandboxRow(trx, sandboxId);
    if (!row) return undefined;
    const sandbox = toRecord(row);
    const type = 'sandbox.lost';
    await insertEvent(trx, dialect, {
      id: webhookEventId(sandbox, type),
      tenant: sandbox.tenant,
      sandbox_id: sandbox.id,
      type,
      payload: JSON.stringify(sandboxEventBody(sandbox, type)),
      created_at: at,
    });
    return sandbox.tenant;
  }

  return {
    async markRunningSandboxesLost(input) {
      const tenants = new Set<string>();
      const ids = await db.transaction().execute(async (trx) => {
        const at = now();
        const lost = await setRunningLost(trx, { code: POD_LOST, message: input.reason }, at);
        for (const id of lost) {
          await retireActiveExecutions(trx, id, POD_LOST, at);
          const tenant = await recordLostEvent(trx, id, at);
          if (tenant !== undefined) tenants.add(tenant);
        }
        return lost;
      });
      for (const tenant of tenants) notifier.notify(feedChangeKey(tenant));
      return ids;
    },
    async markSandboxLost(input) {
      const tenant = await db.transaction().execute(async (trx) => {
        await lockSandbox(trx, dialect, input.sandboxId);
        const at = now();
        const failure = { code: POD_LOST, message: input.reason };
        if (!(await setLost(trx, input, failure, at))) return undefined;
        await retireActiveExecutions(trx, input.sandboxId, POD_LOST, at);
        return recordLostEvent(trx, input.sandboxId, at);
      });
      if (tenant === undefined) return false;
      notifier.notify(feedChangeKey(tenant));
      return true;
    },
  };
}
