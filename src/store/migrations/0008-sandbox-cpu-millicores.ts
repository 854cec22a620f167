/**
 * `sandboxes.cpu_millicores`: the requested CPU in whole millicores, so a fractional request
 * (`0.5`, `"500m"`: contract/cpu.ts) is kept without loss; filled from `cpu * 1000` for the rows
 * before. An expand step only: `cpu` (whole cores) stays, so a process of the release before
 * still reads and writes its rows during a rolling upgrade. This release writes `cpu` as the
 * request rounded up to whole cores and reads `cpu_millicores`, or `cpu * 1000` on a row an old
 * process wrote (src/store/sandboxes.ts). Portable DDL, as 0001.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export const sandboxCpuMillicores: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('sandboxes').addColumn('cpu_millicores', 'integer').execute();
    await sql`update sandboxes set cpu_millicores = cpu * 1000`.execute(db);
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('sandboxes').dropColumn('cpu_millicores').execute();
  },
};
