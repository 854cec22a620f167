/**
 * The operator routes of warm pools (docs/api.md, "Operator routes"; docs/architecture.md,
 * "Warm pools"), mounted under `/admin/v1` behind src/api/operator-auth.ts. Shaped like Kubernetes'
 * `/scale` subresource, so an autoscaler can drive a pool: `spec.size` is what is asked,
 * `status` what the pool's last reconcile saw.
 *
 * - `GET /admin/v1/warm-pools`: every template with a pool.
 * - `GET /admin/v1/warm-pools/{template}`: one pool (404: the template has none).
 * - `PUT /admin/v1/warm-pools/{template}/scale` `{"size": n}` (0 to MAX_WARM_POOL_SIZE; null:
 *   back to the template's configured size): stores the size and wakes the pool (signal-with-
 *   start), which makes or deletes pods to match; no restart. 503 when Temporal cannot be told
 *   (the size is stored: the pool's next resync, at most 60 s away, applies it).
 */
import type { Router } from 'express';
import { z } from 'zod';
import {
  MAX_WARM_POOL_SIZE,
  WARM_POOL_CHANGED_SIGNAL,
  WARM_POOL_WORKFLOW,
  warmPoolWorkflowId,
} from '../../../contract/index.js';
import { warmPoolOf, type TemplateConfig } from '../../config/index.js';
import type { WarmPoolRecord } from '../../store/index.js';
import type { AppDeps } from '../deps.js';
import { ApiError } from '../errors.js';
import { jsonBody } from '../json-body.js';
import { operatorOf } from '../operator-auth.js';

/** A pool as the operator routes show it. */
export interface WarmPoolJson {
  template: string;
  image: string;
  spec: {
    /** The size asked for: the scale route's, else the template's. */
    size: number;
    /** Where `size` comes from. */
    size_from: 'scale' | 'template';
    resources: { cpu: number; memory_mib: number; disk_mib: number };
  };
  status: {
    ready: number;
    pending: number;
    /** Pods creates claimed from the pool, in all. */
    claimed: number;
    /** Set while the pool makes no pods because they keep failing: why, and until when. */
    back_off: { reason: string; until: string } | null;
    /** When the pool's last reconcile ran (null: never yet). */
    observed_at: string | null;
  };
}

function toJson(
  name: string,
  template: TemplateConfig,
  record?: WarmPoolRecord,
): WarmPoolJson | undefined {
  const pool = warmPoolOf(template);
  if (!pool) return undefined;
  const status = record?.status;
  return {
    template: name,
    image: template.image,
    spec: {
      size: record?.size ?? pool.size,
      size_from: record?.size === undefined ? 'template' : 'scale',
      resources: {
        cpu: pool.resources.cpu,
        memory_mib: pool.resources.memoryMib,
        disk_mib: pool.resources.diskMib,
      },
    },
    status: {
      ready: status?.ready ?? 0,
      pending: status?.pending ?? 0,
      claimed: record?.claimed ?? 0,
      back_off: status?.backOff
        ? { reason: status.backOff.reason, until: new Date(status.backOff.untilMs).toISOString() }
        : null,
      observed_at: record?.observedAt ?? null,
    },
  };
}

const scaleBody = z.strictObject({
  size: z
    .number()
    .int(`size must be an integer from 0 to ${MAX_WARM_POOL_SIZE}, or null`)
    .min(0, `size must be an integer from 0 to ${MAX_WARM_POOL_SIZE}, or null`)
    .max(MAX_WARM_POOL_SIZE, `size must be an integer from 0 to ${MAX_WARM_POOL_SIZE}, or null`)
    .nullable(),
});

/** The template of a pool route, or 404. */
function poolTemplate(deps: AppDeps, name: string): TemplateConfig {
  const template = Object.hasOwn(deps.config.templates, name)
    ? deps.config.templates[name]
    : undefined;
  if (!template?.warm_pool) {
    throw new ApiError('not_found', `template ${name} has no warm pool`, { template: name });
  }
  return template;
}

/** Adds the warm-pool routes to the operator router (already authenticated). */
export function addWarmPoolRoutes(router: Router, deps: AppDeps): void {
  router.get('/warm-pools', async (_req, res) => {
    const records = new Map((await deps.store.warmPools.list()).map((r) => [r.template, r]));
    const pools = Object.entries(deps.config.templates)
      .map(([name, template]) => toJson(name, template, records.get(name)))
      .filter((pool) => pool !== undefined);
    res.json({ warm_pools: pools });
  });

  router.get('/warm-pools/:template', async (req, res) => {
    const name = String(req.params.template);
    const template = poolTemplate(deps, name);
    res.json(toJson(name, template, await deps.store.warmPools.get(name)));
  });

  // A scale body is one small JSON object; the tenant routes' Content-Type rule applies.
  router.put('/warm-pools/:template/scale', ...jsonBody(1024), async (req, res) => {
    const name = String(req.params.template);
    const template = poolTemplate(deps, name);
    const parsed = scaleBody.safeParse(req.body);
    if (!parsed.success) {
      throw new ApiError(
        'invalid_request',
        parsed.error.issues[0]?.message ?? 'the body must be {"size": <integer or null>}',
      );
    }
    await deps.store.warmPools.setSize(name, parsed.data.size);
    deps.logger.info(
      { operator: operatorOf(res), template: name, size: parsed.data.size },
      'warm pool scaled by an operator',
    );
    try {
      await deps.temporal.workflow.signalWithStart(WARM_POOL_WORKFLOW, {
        workflowId: warmPoolWorkflowId(deps.config.taskQueue, name),
        taskQueue: deps.config.taskQueue,
        args: [{ template: name }],
        signal: WARM_POOL_CHANGED_SIGNAL,
        staticSummary: `warm pool of template ${name}`,
      });
    } catch (err) {
      throw new ApiError(
        'unavailable',
        `the size is stored, but the pool could not be told (${(err as Error).message}); ` +
          'it applies the size at its next resync',
      );
    }
    res.json(toJson(name, template, await deps.store.warmPools.get(name)));
  });
}
