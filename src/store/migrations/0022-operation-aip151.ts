/**
 * Operations as AIP-151 describes them (docs/api.md, "Operations"): `end_time` (when the phase
 * became `finished`), `cancel_requested_at` (when a cancel was asked: `requested_cancellation`)
 * and `create_path` (`warm` or `cold`: how a create got its pod). An expand step only (nullable
 * columns): the release before neither reads nor writes them. A row finished before this
 * migration gets its `updated_at` as its `end_time` (nothing writes a finished row after). Portable
 * DDL, as 0001.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export const operationAip151: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').addColumn('end_time', 'text').execute();
    await db.schema.alterTable('operations').addColumn('cancel_requested_at', 'text').execute();
    await db.schema.alterTable('operations').addColumn('create_path', 'text').execute();
    await sql`update operations set end_time = updated_at where phase = 'finished'`.execute(db);
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').dropColumn('create_path').execute();
    await db.schema.alterTable('operations').dropColumn('cancel_requested_at').execute();
    await db.schema.alterTable('operations').dropColumn('end_time').execute();
  },
};
