/**
 * The index `sandboxes_state_updated_at`: the orphan sweep pages through the `running`
 * sandboxes oldest first, every ORPHAN_SWEEP_INTERVAL_MS (src/worker/orphan-sweeper.ts,
 * src/store/sandboxes.ts `selectRunningBefore`), so each page reads the running ones by index instead
 * of scanning every sandbox ever stored. An expand step only. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const sandboxesStateUpdatedAt: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('sandboxes_state_updated_at')
      .on('sandboxes')
      .columns(['state', 'updated_at', 'id'])
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex('sandboxes_state_updated_at').execute();
  },
};
