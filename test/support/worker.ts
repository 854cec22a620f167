/**
 * A create worker for one test, on a task queue of its own, built as every worker is
 * (src/worker/sandbox-worker.ts): for tests that need a worker over another cluster client or
 * Temporal namespace than the stack's.
 */
import type { RefusalBoundsMs } from '../../src/activities/pods.js';
import type { KubernetesClient } from '../../src/kubernetes/client.js';
import type { Store } from '../../src/store/index.js';
import { DEFAULT_TEMPLATES, type TemplateConfig } from '../../src/config/index.js';
import { runSandboxWorker } from '../../src/worker/sandbox-worker.js';
import type { TemporalTestContext } from './temporal.js';

/** What {@link withSandboxWorker} runs a worker with. */
export interface WithSandboxWorkerOptions {
  temporal: TemporalTestContext;
  store: Store;
  kubernetes: KubernetesClient;
  taskQueue: string;
  /** Temporal namespace (default `default`). */
  namespace?: string;
  /** The worker's template catalog (default: the service's, `base` only). */
  templates?: Record<string, TemplateConfig>;
  /** How long a 401 or an RBAC 403 is retried, in ms (default: the service's, 60 000 each). */
  refusalBoundsMs?: Partial<RefusalBoundsMs>;
}

/**
 * Runs `body` while a worker (and its informers, first back-off 100 ms) serves the task queue;
 * shuts both down afterwards, whether `body` passed or threw.
 */
export async function withSandboxWorker<T>(
  options: WithSandboxWorkerOptions,
  body: () => Promise<T>,
): Promise<T> {
  const started = await runSandboxWorker({
    connection: options.temporal.nativeConnection,
    namespace: options.namespace ?? 'default',
    taskQueue: options.taskQueue,
    kubernetes: options.kubernetes,
    store: options.store,
    templates: options.templates ?? DEFAULT_TEMPLATES,
    watchRetryDelayMs: 100,
    watchTimeoutSeconds: 25,
    refusalBoundsMs: options.refusalBoundsMs,
    worker: { workflowBundle: options.temporal.workflowBundle },
  });
  try {
    return await body();
  } finally {
    await started.stop();
  }
}
