/**
 * `operations.trace_id`: the W3C trace id (32 lowercase hex digits) of the trace a create was
 * recorded in (docs/observability.md); null when traces were off, and for rows written before.
 */
import type { Kysely, Migration } from 'kysely';

export const operationTraceId: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').addColumn('trace_id', 'text').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').dropColumn('trace_id').execute();
  },
};
