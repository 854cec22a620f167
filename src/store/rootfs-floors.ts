/**
 * Rootfs floors learned per image (docs/architecture.md, "Rootfs floors"): one row per image,
 * replaced only by evidence at least as new.
 */
import type { Kysely } from 'kysely';
import type { LearnedRootfsFloor } from '../../contract/index.js';
import type { Database, RootfsFloorsTable } from './schema.js';

/**
 * Records a learned floor for its image unless the stored one is newer evidence
 * (`INSERT … ON CONFLICT (image) DO UPDATE … WHERE stored.learned_at <= new.learned_at`; equal
 * times: the later write wins), or the image has already run with a smaller disk than the floor
 * states (`image_run_disks`): a node's refusal cannot be right about a size the image ran below,
 * so such evidence (stale, or forged) is not learned. A write clears the floor's `probe_at`.
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
    probe_at: null,
  };
  const { image: _image, ...update } = row;
  return db.transaction().execute(async (trx) => {
    const ran = await trx
      .selectFrom('image_run_disks')
      .select('smallest_disk_mib')
      .where('image', '=', floor.image)
      .executeTakeFirst();
    if (ran && floor.rootfsMib > ran.smallest_disk_mib) return false;
    const result = await trx
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
  });
}

/**
 * Notes that a sandbox of `image` ran with a `diskMib` disk: keeps the smallest such disk per
 * image (`image_run_disks`), and forgets the image's learned floor when it is above that disk
 * (the floor is proven wrong: the image's root filesystem fits in `diskMib`). One transaction,
 * unless one read finds it would change nothing ({@link changesNothing}), as for most runs.
 * @param ran `atMs`: when the sandbox reached `running` (epoch ms)
 * @returns the floor forgotten, or undefined when the image had none above `diskMib`
 */
export async function noteImageRan(
  db: Kysely<Database>,
  ran: { image: string; diskMib: number; atMs: number },
): Promise<LearnedRootfsFloor | undefined> {
  if (await changesNothing(db, ran)) return undefined;
  const at = new Date(ran.atMs).toISOString();
  return db.transaction().execute(async (trx) => {
    await trx
      .insertInto('image_run_disks')
      .values({ image: ran.image, smallest_disk_mib: ran.diskMib, ran_at: at })
      .onConflict((conflict) =>
        conflict
          .column('image')
          .doUpdateSet({ smallest_disk_mib: ran.diskMib, ran_at: at })
          .where('image_run_disks.smallest_disk_mib', '>', ran.diskMib),
      )
      .execute();
    const forgotten = await trx
      .deleteFrom('rootfs_floors')
      .where('image', '=', ran.image)
      .where('rootfs_mib', '>', ran.diskMib)
      .returningAll()
      .executeTakeFirst();
    return forgotten && toFloor(forgotten);
  });
}

/**
 * Whether {@link noteImageRan} would change nothing: the image already ran with `diskMib` or a
 * smaller disk, and its floor (if any) is not above `diskMib`. One read, no transaction. What it
 * reads stays so: the smallest disk only shrinks, and {@link upsertRootfsFloor} learns no floor
 * above it, so the note's write would find the same.
 */
async function changesNothing(
  db: Kysely<Database>,
  ran: { image: string; diskMib: number },
): Promise<boolean> {
  const row = await db
    .selectNoFrom((eb) => [
      eb
        .selectFrom('image_run_disks')
        .select('smallest_disk_mib')
        .where('image', '=', ran.image)
        .as('smallest_mib'),
      eb
        .selectFrom('rootfs_floors')
        .select('rootfs_mib')
        .where('image', '=', ran.image)
        .as('floor_mib'),
    ])
    .executeTakeFirstOrThrow();
  const { smallest_mib: smallest, floor_mib: floor } = row;
  return (
    smallest !== null &&
    Number(smallest) <= ran.diskMib &&
    (floor === null || Number(floor) <= ran.diskMib)
  );
}

/**
 * Claims the next proof of an old floor (a circuit breaker's half-open state): sets the floor's
 * `probe_at` to now when the floor is still the one the caller read (same `learned_at`), was
 * learned at least `afterMs` ago, and no create was let through it in the last `afterMs`. At
 * most one caller per image wins per `afterMs`, across every API replica (one conditional
 * `UPDATE`).
 * @param probe `learnedAtMs` of the floor as read; `nowMs` and `afterMs` in ms
 * @returns true when this caller may let one create through the floor
 */
export async function claimRootfsFloorProbe(
  db: Kysely<Database>,
  probe: { image: string; learnedAtMs: number; nowMs: number; afterMs: number },
): Promise<boolean> {
  const cutoff = new Date(probe.nowMs - probe.afterMs).toISOString();
  const learnedAt = new Date(probe.learnedAtMs).toISOString();
  const result = await db
    .updateTable('rootfs_floors')
    .set({ probe_at: new Date(probe.nowMs).toISOString() })
    .where('image', '=', probe.image)
    .where('learned_at', '=', learnedAt)
    .where('learned_at', '<=', cutoff)
    .where((eb) => eb.or([eb('probe_at', 'is', null), eb('probe_at', '<=', cutoff)]))
    .executeTakeFirst();
  return (result.numUpdatedRows ?? 0n) > 0n;
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
