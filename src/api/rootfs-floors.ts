/**
 * Rootfs floors at the API (docs/configuration.md, "Templates"; docs/architecture.md, "Rootfs floors"): a
 * template's effective floor (declared in SANDBOX_TEMPLATES, else learned for its current image,
 * else unknown), and the refusal before 202 of a create whose `disk_mib` is below it.
 */
import type { TemplateConfig } from '../config/index.js';
import type { LearnedRootfsFloor, RootfsFloor } from '../../contract/index.js';
import type { AppDeps } from './deps.js';
import { ApiError } from './errors.js';
import { createsRefused } from './metrics.js';
import type { CreateRequest } from './validation.js';
import { rootfsFloorToWire } from './wire.js';

/**
 * How old a learned floor must be before one create is let through it to prove it again, and
 * how long after such a create the next may be (1 h): a floor that is wrong (stale after an image
 * rebuild, or taught by a forged event) shuts its template for at most this long without an
 * operator. A create let through that a node refuses teaches the floor anew (closing it for
 * another hour); one that runs forgets it (store `noteImageRan`).
 */
export const ROOTFS_FLOOR_PROBE_AFTER_MS = 3_600_000;

/**
 * A template's effective floor: the declared `rootfs_mib` wins; else the floor learned for the
 * template's current image (a floor learned for another image never applies); else unknown.
 */
export function effectiveRootfsFloor(
  template: TemplateConfig,
  learned: LearnedRootfsFloor | undefined,
): RootfsFloor {
  if (template.rootfs_mib !== undefined) {
    return { source: 'declared', rootfsMib: template.rootfs_mib };
  }
  if (learned && learned.image === template.image) {
    return { source: 'learned', rootfsMib: learned.rootfsMib, learned };
  }
  return { source: 'unknown' };
}

/**
 * The effective floors of the named templates, with one store read for all of them (the
 * store is shared by every API replica, so a floor one learned is seen by all).
 * @returns template name -> floor, for every name in the catalog
 * @throws the store's error when the database fails
 */
export async function rootfsFloorsOf(
  deps: Pick<AppDeps, 'store' | 'config'>,
  names: readonly string[],
): Promise<Map<string, RootfsFloor>> {
  const templates = names.flatMap((name) => {
    const template = deps.config.templates[name];
    return template ? [{ name, template }] : [];
  });
  const needLearned = templates.filter(({ template }) => template.rootfs_mib === undefined);
  const learned = await (needLearned.length === 0
    ? Promise.resolve([])
    : deps.store.listRootfsFloors(needLearned.map(({ template }) => template.image)));
  const byImage = new Map(learned.map((floor) => [floor.image, floor]));
  return new Map(
    templates.map(({ name, template }) => [
      name,
      effectiveRootfsFloor(template, byImage.get(template.image)),
    ]),
  );
}

/**
 * Where a floor came from, in words, for a refusal's message: the time and node of a learned
 * floor only to the tenant whose create taught it (another tenant learns its size only).
 */
function floorOrigin(floor: Exclude<RootfsFloor, { source: 'unknown' }>, tenant: string): string {
  if (floor.source === 'declared') return 'declared in SANDBOX_TEMPLATES';
  if (floor.learned.tenantId !== tenant) return 'learned from a node refusal';
  const { learnedAtMs, nodeName } = floor.learned;
  const node = nodeName ? ` on node ${nodeName}` : '';
  return `learned from a node refusal at ${new Date(learnedAtMs).toISOString()}${node}`;
}

/**
 * Refuses, before anything is stored or started, a create whose `disk_mib` is below its
 * template's known floor. A request whose `Idempotency-Key` the tenant already used is let
 * through, so it replays (or conflicts) as the idempotency rules say; a refused request stores
 * nothing, so the same key and body sent again is judged again. A learned floor older than
 * {@link ROOTFS_FLOOR_PROBE_AFTER_MS} lets one create through per that time, across replicas
 * (the store's `claimRootfsFloorProbe`), so a node proves it again.
 * @throws ApiError `invalid_request` (400) naming the floor and its origin; `details` carry
 *   `template`, `image`, `rootfs_floor` (as `GET /v1/templates/{name}` shows it) and `problems`
 * @throws the store's error when the database fails
 */
export async function refuseBelowRootfsFloor(
  deps: Pick<AppDeps, 'store' | 'config'> & Partial<Pick<AppDeps, 'logger'>>,
  command: { tenant: string; request: CreateRequest; idempotencyKey?: string },
): Promise<void> {
  const { template: name, resources } = command.request;
  const floor = (await rootfsFloorsOf(deps, [name])).get(name);
  if (!floor || floor.source === 'unknown' || resources.diskMib >= floor.rootfsMib) return;
  if (command.idempotencyKey !== undefined) {
    const earlier = await deps.store.findIdempotencyKey(command.tenant, command.idempotencyKey);
    if (earlier) return;
  }
  if (floor.source === 'learned' && (await claimProbe(deps, floor.learned))) {
    deps.logger?.info(
      { template: name, image: floor.learned.image, rootfs_floor: floor.rootfsMib },
      'rootfs floor probe: one create let through an old floor to prove it again',
    );
    return;
  }
  createsRefused().inc({ template: name, source: floor.source });
  throw new ApiError(
    'invalid_request',
    `template ${name} needs at least ${floor.rootfsMib} MiB of disk (${floorOrigin(floor, command.tenant)}); ` +
      `resources.disk_mib is ${resources.diskMib}`,
    {
      template: name,
      image: deps.config.templates[name]?.image,
      rootfs_floor: rootfsFloorToWire(floor, command.tenant),
      problems: [{ field: 'resources.disk_mib', message: `must be at least ${floor.rootfsMib}` }],
    },
  );
}

/** Claims the probe of an old learned floor; false while the floor is young or a probe is recent. */
async function claimProbe(
  deps: Pick<AppDeps, 'store'>,
  learned: LearnedRootfsFloor,
): Promise<boolean> {
  const nowMs = Date.now();
  if (nowMs - learned.learnedAtMs < ROOTFS_FLOOR_PROBE_AFTER_MS) return false;
  return deps.store.claimRootfsFloorProbe({
    image: learned.image,
    learnedAtMs: learned.learnedAtMs,
    nowMs,
    afterMs: ROOTFS_FLOOR_PROBE_AFTER_MS,
  });
}
