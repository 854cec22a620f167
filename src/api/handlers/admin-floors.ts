/**
 * The operator routes of learned rootfs floors (docs/api.md, "Operator routes"): where each
 * floor came from, and clearing one. Served only when ADMIN_TOKENS names an operator, behind
 * src/api/operator-auth.ts; no tenant token reaches them.
 *
 * - `GET /admin/v1/rootfs-floors`: every learned floor with its whole evidence: image, the
 *   templates that use the image now, size, the refusal event's time, node, the tenant and
 *   operation whose create taught it, and the reason as stored.
 * - `DELETE /admin/v1/rootfs-floors/{template}`: forgets the floor learned for the template's
 *   current image (200 with the floor removed; 404 when the template is unknown or has none).
 *   The next decisive refusal of that image teaches it again.
 */
import { Router } from 'express';
import type { LearnedRootfsFloor } from '../../../contract/index.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { operatorAuth, operatorOf } from '../operator-auth.js';
import { addWarmPoolRoutes } from './admin-warm-pools.js';

/** Where the operator routes live. */
export const ADMIN_PREFIX = '/admin/v1';

/** A learned floor as the operator routes show it. */
export interface AdminRootfsFloorJson {
  image: string;
  /** The catalog's templates whose current image this is (empty: no template uses it now). */
  templates: string[];
  /** The template the create that taught it named. */
  learned_from_template: string;
  rootfs_mib: number;
  learned_at: string;
  node_name: string | null;
  tenant: string;
  operation_id: string;
  reason: string;
}

function toJson(floor: LearnedRootfsFloor, deps: Pick<AppDeps, 'config'>): AdminRootfsFloorJson {
  const templates = Object.entries(deps.config.templates)
    .filter(([, template]) => template.image === floor.image)
    .map(([name]) => name)
    .sort();
  return {
    image: floor.image,
    templates,
    learned_from_template: floor.template,
    rootfs_mib: floor.rootfsMib,
    learned_at: new Date(floor.learnedAtMs).toISOString(),
    node_name: floor.nodeName,
    tenant: floor.tenantId,
    operation_id: floor.operationId,
    reason: floor.reason,
  };
}

/** The router of the operator routes, mounted at {@link ADMIN_PREFIX}; authenticates first. */
export function adminRouter(deps: AppDeps): Router {
  const router = Router();
  router.use(operatorAuth({ tokens: deps.config.adminTokens, logger: deps.logger }));

  router.get('/rootfs-floors', async (_req, res) => {
    const floors = await deps.store.listAllRootfsFloors();
    res.json({ floors: floors.map((floor) => toJson(floor, deps)) });
  });

  router.delete('/rootfs-floors/:template', async (req, res) => {
    const name = String(req.params.template);
    const template = Object.hasOwn(deps.config.templates, name)
      ? deps.config.templates[name]
      : undefined;
    if (!template) {
      throw new ApiError('not_found', `template ${name} does not exist`, { template: name });
    }
    const removed = await deps.store.deleteRootfsFloor(template.image);
    if (!removed) {
      throw new ApiError('not_found', `template ${name} has no learned rootfs floor`, {
        template: name,
        image: template.image,
      });
    }
    deps.logger.warn(
      {
        operator: operatorOf(res),
        template: name,
        image: removed.image,
        rootfs_mib: removed.rootfsMib,
        tenant: removed.tenantId,
        operation_id: removed.operationId,
      },
      'learned rootfs floor cleared by an operator',
    );
    res.json({ cleared: toJson(removed, deps) });
  });
  addWarmPoolRoutes(router, deps);
  return router;
}
