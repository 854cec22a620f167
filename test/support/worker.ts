/**
 * A create worker built by hand for one test, on a task queue of its own, with the per-worker
 * informer pair every real worker holds (worker/serve.ts): for tests that need a worker over
 * another cluster client or Temporal namespace than the stack's.
 */
import { Client } from '@temporalio/client';
import { createMetrics } from '../../activities/metrics.js';
import { ReadinessDecider } from '../../activities/readiness-decider.js';
import type { RefusalBoundsMs } from '../../activities/pods.js';
import type { KubernetesClient } from '../../kubernetes/client.js';
import { SandboxInformers } from '../../kubernetes/sandbox-informers.js';
import type { Store } from '../../store/index.js';
import { DEFAULT_TEMPLATES, type TemplateConfig } from '../../config/index.js';
import { createSandboxWorker } from '../../worker/worker.js';
import type { TemporalTestContext } from './temporal.js';

/** What {@link withSandboxWorker} runs a worker with. */
export interface SandboxWorkerOptions {
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
  options: SandboxWorkerOptions,
  body: () => Promise<T>,
): Promise<T> {
  const informers = new SandboxInformers({
    client: options.kubernetes,
    retryDelayMs: 100,
    watchTimeoutSeconds: 25,
    unauthorizedBoundMs: options.refusalBoundsMs?.unauthorized,
    forbiddenBoundMs: options.refusalBoundsMs?.permission,
  });
  const namespace = options.namespace ?? 'default';
  const decider = new ReadinessDecider({
    informers,
    store: options.store,
    client: new Client({ connection: options.temporal.nativeConnection, namespace }),
  });
  decider.start();
  informers.start();
  const worker = await createSandboxWorker({
    connection: options.temporal.nativeConnection,
    namespace,
    taskQueue: options.taskQueue,
    workflowBundle: options.temporal.workflowBundle,
    deps: {
      kubernetes: options.kubernetes,
      store: options.store,
      templates: options.templates ?? DEFAULT_TEMPLATES,
      informers,
      decider,
      metrics: createMetrics(),
      refusalBoundsMs: options.refusalBoundsMs,
    },
  });
  const running = worker.run();
  try {
    return await body();
  } finally {
    worker.shutdown();
    await running;
    await decider.stop();
    await informers.stop();
  }
}
