/**
 * Rootfs floors at the API (docs/configuration.md, "Templates"; docs/architecture.md, "Rootfs floors"): a
 * template's effective floor (declared in SANDBOX_TEMPLATES, else learned for its current image,
 * else unknown), and the refusal before 202 of a create whose `disk_mib` is below it.
 */
import type { TemplateConfig } from '../config/index.js';
import type { LearnedRootfsFloor, RootfsFloor } from '../contract/index.js';
import type { AppDeps } from './deps.js';
import { ApiError } from './errors.js';
import { createsRefused } from './metrics.js';
import type { CreateRequest } from './validation.js';
import { rootfsFloorToWire } from './wire.js';

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

/** Where a floor came from, in words, for a refusal's message. */
function floorOrigin(floor: Exclude<RootfsFloor, { source: 'unknown' }>): string {
  if (floor.source === 'declared') return 'declared in SANDBOX_TEMPLATES';
  const { learnedAtMs, nodeName } = floor.learned;
  const node = nodeName ? ` on node ${nodeName}` : '';
  return `learned from a node refusal at ${new Date(learnedAtMs).toISOString()}${node}`;
}

/**
 * Refuses, before anything is stored or started, a create whose `disk_mib` is below its
 * template's known floor. A request whose `Idempotency-Key` the tenant already used is let
 * through, so it replays (or conflicts) as the idempotency rules say; a refused request stores
 * nothing, so the same key and body sent again is judged again.
 * @throws ApiError `invalid_request` (400) naming the floor and its origin; `details` carry
 *   `template`, `image`, `rootfs_floor` (as `GET /v1/templates/{name}` shows it) and `problems`
 * @throws the store's error when the database fails
 */
export async function refuseBelowRootfsFloor(
  deps: Pick<AppDeps, 'store' | 'config'>,
  command: { tenant: string; request: CreateRequest; idempotencyKey?: string },
): Promise<void> {
  const { template: name, resources } = command.request;
  const floor = (await rootfsFloorsOf(deps, [name])).get(name);
  if (!floor || floor.source === 'unknown' || resources.diskMib >= floor.rootfsMib) return;
  if (command.idempotencyKey !== undefined) {
    const earlier = await deps.store.findIdempotencyKey(command.tenant, command.idempotencyKey);
    if (earlier) return;
  }
  createsRefused().inc({ template: name, source: floor.source });
  throw new ApiError(
    'invalid_request',
    `template ${name} needs at least ${floor.rootfsMib} MiB of disk (${floorOrigin(floor)}); ` +
      `resources.disk_mib is ${resources.diskMib}`,
    {
      template: name,
      image: deps.config.templates[name]?.image,
      rootfs_floor: rootfsFloorToWire(floor, command.tenant),
      problems: [{ field: 'resources.disk_mib', message: `must be at least ${floor.rootfsMib}` }],
    },
  );
}
