/**
 * The template catalog (docs/configuration.md, "Templates"): each template of SANDBOX_TEMPLATES with its image
 * and its rootfs floor (declared, learned or unknown; src/api/rootfs-floors.ts).
 */
import type { RequestHandler } from 'express';
import { tenantOf } from '../auth.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { rootfsFloorsOf } from '../rootfs-floors.js';
import { templateToWire, type TemplateJson } from '../wire.js';

/** Handlers of the template routes. */
export function templateHandlers(deps: AppDeps) {
  async function catalog(names: readonly string[], tenant: string): Promise<TemplateJson[]> {
    const floors = await rootfsFloorsOf(deps, names);
    return names.flatMap((name) => {
      const template = deps.config.templates[name];
      const floor = floors.get(name);
      return template && floor ? [templateToWire(name, template, floor, tenant)] : [];
    });
  }

  /** `GET /v1/templates`: every template, by name. */
  const listTemplates: RequestHandler = async (_req, res) => {
    const names = Object.keys(deps.config.templates).sort();
    res.json({ templates: await catalog(names, tenantOf(res)) });
  };

  /** `GET /v1/templates/{name}`: one template; 404 when the catalog has no such name. */
  const getTemplate: RequestHandler = async (req, res) => {
    const name = String(req.params.name);
    const [template] = Object.hasOwn(deps.config.templates, name)
      ? await catalog([name], tenantOf(res))
      : [];
    if (!template) {
      throw new ApiError('not_found', `template ${name} does not exist`, { template: name });
    }
    res.json(template);
  };

  return { listTemplates, getTemplate };
}
