/**
 * Rootfs floors learned per image (docs/architecture.md, "Rootfs floors"): one row per image,
 * replaced only by evidence at least as new.
 */
import type { Kysely } from 'kysely';
import type { LearnedRootfsFloor } from '../contract/index.js';
import type { Database, RootfsFloorsTable } from './schema.js';

/**
 * Records a learned floor for its image unless the stored one is newer evidence
 * (`INSERT … ON CONFLICT (image) DO UPDATE … WHERE stored.learned_at <= new.learned_at`; equal
 * times: the later write wins).
 * @returns true when it wrote
 */
export async function upsertRootfsFloor(
  db: Kysely<Database>,
  floor: LearnedRootfsFloor,
): Promise<boolean> {
  const row: RootfsFloorsTable = {
    image: floor.image,
    template: floor.template,
    rootfs_mib: floor.rootfsMib,
    learned_at: new Date(floor.learnedAtMs).toISOString(),
    operation_id: floor.operationId,
    tenant: floor.tenantId,
    node_name: floor.nodeName,
    reason: floor.reason,
  };
  const { image: _image, ...update } = row;
  const result = await db
    .insertInto('rootfs_floors')
    .values(row)
    .onConflict((conflict) =>
      conflict
        .column('image')
        .doUpdateSet(update)
        .where('rootfs_floors.learned_at', '<=', row.learned_at),
    )
    .executeTakeFirst();
  return (result.numInsertedOrUpdatedRows ?? 0n) > 0n;
}

/** The floors learned for these images (any order); images without one are absent. */
export async function selectRootfsFloors(
  db: Kysely<Database>,
  images: readonly string[],
): Promise<LearnedRootfsFloor[]> {
  if (images.length === 0) return [];
  const rows = await db
    .selectFrom('rootfs_floors')
    .selectAll()
    .where('image', 'in', [...images])
    .execute();
  return rows.map(toFloor);
}

/** Every learned floor, by image (one row per image, so a few per template at most). */
export async function selectAllRootfsFloors(db: Kysely<Database>): Promise<LearnedRootfsFloor[]> {
  const rows = await db.selectFrom('rootfs_floors').selectAll().orderBy('image').execute();
  return rows.map(toFloor);
}

/**
 * Forgets the floor learned for an image (an operator's decision, docs/api.md "Operator routes").
 * @returns the floor removed, or undefined when the image had none
 */
export async function deleteRootfsFloor(
  db: Kysely<Database>,
  image: string,
): Promise<LearnedRootfsFloor | undefined> {
  const row = await db
    .deleteFrom('rootfs_floors')
    .where('image', '=', image)
    .returningAll()
    .executeTakeFirst();
  return row && toFloor(row);
}

function toFloor(row: RootfsFloorsTable): LearnedRootfsFloor {
  return {
    image: row.image,
    template: row.template,
    rootfsMib: row.rootfs_mib,
    learnedAtMs: Date.parse(row.learned_at),
    operationId: row.operation_id,
    tenantId: row.tenant,
    nodeName: row.node_name,
    reason: row.reason,
  };
}
