/**
 * `rootfs_floors`: the rootfs floor learned for each template image from a node's decisive
 * refusal (docs/architecture.md, "Rootfs floors"). Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const rootfsFloors: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createTable('rootfs_floors')
      .addColumn('image', 'text', (col) => col.primaryKey())
      .addColumn('template', 'text', (col) => col.notNull())
      .addColumn('rootfs_mib', 'integer', (col) => col.notNull())
      .addColumn('learned_at', 'text', (col) => col.notNull())
      .addColumn('operation_id', 'text', (col) => col.notNull())
      .addColumn('tenant', 'text', (col) => col.notNull())
      .addColumn('node_name', 'text')
      .addColumn('reason', 'text', (col) => col.notNull())
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropTable('rootfs_floors').execute();
  },
};
