/**
 * The index `sandboxes_tenant_state`: every create counts its tenant's active sandboxes and
 * their resources inside its transaction (src/store/tenant-usage.ts), so the count reads the
 * tenant's `creating` and `running` rows by index instead of every sandbox the tenant ever had.
 * An expand step only. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const sandboxesTenantState: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema
      .createIndex('sandboxes_tenant_state')
      .on('sandboxes')
      .columns(['tenant', 'state'])
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex('sandboxes_tenant_state').execute();
  },
};
