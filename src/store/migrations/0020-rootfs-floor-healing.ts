/**
 * Floors that heal (docs/configuration.md, "Rootfs floors that heal"): `rootfs_floors.probe_at`,
 * when a create was last let through an old floor to prove it again (a circuit breaker's
 * half-open state), and `image_run_disks`, the smallest disk each image has run with, above
 * which no floor is learned. The release before neither reads nor writes either. Portable DDL,
 * as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const rootfsFloorHealing: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('rootfs_floors').addColumn('probe_at', 'text').execute();
    await db.schema
      .createTable('image_run_disks')
      .addColumn('image', 'text', (col) => col.primaryKey())
      .addColumn('smallest_disk_mib', 'integer', (col) => col.notNull())
      .addColumn('ran_at', 'text', (col) => col.notNull())
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('image_run_disks').execute();
    await db.schema.alterTable('rootfs_floors').dropColumn('probe_at').execute();
  },
};
