/**
 * `operations.placements`: the placements of a create that nodes refused with a re-placement
 * code (docs/architecture.md, "Re-placement"), a JSON array of PlacementRecord, oldest first;
 * null when there is none; and `readiness_waits.placement`: what a re-placing create's wait
 * also ends on (JSON WaitPlacement), null for a wait that does not re-place. Portable DDL, as
 * 0001.
 */
import type { Kysely, Migration } from 'kysely';

export const operationPlacements: Migration = {
  async up(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('operations').addColumn('placements', 'text').execute();
    await db.schema.alterTable('readiness_waits').addColumn('placement', 'text').execute();
  },

  async down(db: Kysely<unknown>): Promise<void> {
    await db.schema.alterTable('readiness_waits').dropColumn('placement').execute();
    await db.schema.alterTable('operations').dropColumn('placements').execute();
  },
};
