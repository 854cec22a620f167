/**
 * Starts the warm pools of the worker's catalog (docs/architecture.md, "Warm pools"): one
 * `warmPool` workflow per template with `warm_pool`, signal-with-started under its fixed id
 * (`warm-pool/<task queue>/<template>`), so every worker may do it and one pool runs; a pool already running
 * is only told to reconcile. A pool the catalog dropped ends by itself at its next reconcile,
 * after deleting its pods.
 */
import type { Client } from '@temporalio/client';
import {
  WARM_POOL_CHANGED_SIGNAL,
  WARM_POOL_WORKFLOW,
  warmPoolWorkflowId,
} from '../../contract/index.js';
import type { TemplateConfig } from '../config/index.js';
import type { InformerLogger } from '../kubernetes/sandbox-informers.js';
import type { WarmPoolInput } from '../workflows/warm-pool.js';

/**
 * Signal-with-starts the pool workflow of each template with a `warm_pool`. A failure is
 * logged, not thrown: the worker serves creates either way, and the next worker start (or the
 * scale route) starts the pool.
 * @returns the templates whose pool was started or woken
 */
export async function startWarmPools(options: {
  client: Pick<Client, 'workflow'>;
  taskQueue: string;
  templates: Record<string, TemplateConfig>;
  logger?: InformerLogger;
}): Promise<string[]> {
  const started: string[] = [];
  for (const [template, config] of Object.entries(options.templates)) {
    if (!config.warm_pool) continue;
    try {
      await options.client.workflow.signalWithStart(WARM_POOL_WORKFLOW, {
        workflowId: warmPoolWorkflowId(options.taskQueue, template),
        taskQueue: options.taskQueue,
        args: [{ template } satisfies WarmPoolInput],
        signal: WARM_POOL_CHANGED_SIGNAL,
        staticSummary: `warm pool of template ${template}`,
      });
      started.push(template);
    } catch (err) {
      options.logger?.warn(
        { template, error: (err as Error).message },
        'warm pool not started; the next worker start or scale starts it',
      );
    }
  }
  return started;
}
