/**
 * Labels (docs/api.md, "Labels and filters"): `sandboxes.labels`, the JSON object of a
 * sandbox's labels as it shows them (null: none, as on every row of the release before), and
 * `sandbox_labels`, one row per label, the index a label selector reads (src/store/labels.ts):
 * `sandbox_labels_selector` (tenant, key, value, created_at, sandbox_id) gives a tenant's
 * sandboxes with one key and value newest first, so a page of `team=a` reads about a page of
 * rows however many sandboxes the tenant has; the primary key (sandbox_id, key) answers "does
 * this sandbox carry this label" for the selector's other requirements. `numeric_value` is the
 * value as 19 zero-padded digits when Kubernetes would read it as an integer (`gt`, `lt`),
 * else null. `created_at` is the sandbox's, copied so the index orders by it.
 *
 * And `operations_tenant_sandbox` (tenant, sandbox_id, created_at, id) for `GET /v1/operations
 * ?sandbox_id=`. An expand step only (a nullable column, a table, indexes), so the release
 * before runs on it unchanged. Portable DDL, as 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const sandboxLabels: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('sandboxes').addColumn('labels', 'text').execute();
    await db.schema
      .createTable('sandbox_labels')
      .addColumn('sandbox_id', 'text', (col) =>
        col.notNull().references('sandboxes.id').onDelete('cascade'),
      )
      .addColumn('tenant', 'text', (col) => col.notNull())
      .addColumn('key', 'text', (col) => col.notNull())
      .addColumn('value', 'text', (col) => col.notNull())
      .addColumn('numeric_value', 'text')
      .addColumn('created_at', 'text', (col) => col.notNull())
      .addPrimaryKeyConstraint('sandbox_labels_pk', ['sandbox_id', 'key'])
      .execute();
    await db.schema
      .createIndex('sandbox_labels_selector')
      .on('sandbox_labels')
      .columns(['tenant', 'key', 'value', 'created_at', 'sandbox_id'])
      .execute();
    await db.schema
      .createIndex('operations_tenant_sandbox')
      .on('operations')
      .columns(['tenant', 'sandbox_id', 'created_at', 'id'])
      .execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.dropIndex('operations_tenant_sandbox').execute();
    await db.schema.dropTable('sandbox_labels').execute();
    await db.schema.alterTable('sandboxes').dropColumn('labels').execute();
  },
};
