/**
 * Runs a create worker in the background (the middle of the worker's three layers: build,
 * run, serve). The one way a create worker is put together, by `npm run worker` and `npm start`
 * (src/worker/serve.ts) and by the tests alike: the worker's informer pair (one pods and one events
 * informer for every wait of the process: docs/architecture.md, "The readiness watch"), the
 * readiness decider over them ("Waiting costs nothing"), and the Temporal worker with the real
 * activities (src/worker/temporal-worker.ts), started in that order and run in the background. A test that
 * runs its worker here runs what production runs; only the options differ.
 */
import { Client, ScheduleClient } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { createMetrics, type CreateMetrics } from '../activities/metrics.js';
import type { RefusalBoundsMs } from '../activities/pods.js';
import { ReadinessDecider, type ReadinessDeciderOptions } from '../verdict/readiness-decider.js';
import { floorLearning } from '../verdict/outcome-at-decision.js';
import type { KubernetesClient } from '../kubernetes/client.js';
import { RefusalBounds } from '../verdict/refusal-bounds.js';
import type { TemplateConfig, TenantLimitsConfig } from '../config/index.js';
import type { RetentionConfig } from '../config/retention.js';
import { ensureRetentionSchedule } from '../temporal/retention-schedule.js';
import {
  SandboxInformers,
  type InformerLogger,
  type SandboxInformersOptions,
} from '../kubernetes/sandbox-informers.js';
import type { Store } from '../store/index.js';
import type { WebhookDeliveryOptions } from '../activities/webhook-delivery.js';
import { buildTemporalWorker, type TemporalWorkerOptions } from './temporal-worker.js';
import { startWarmPools } from './warm-pool-start.js';
import { WarmPodInformer } from '../kubernetes/warm-pod-informer.js';

/** Options of {@link runSandboxWorker}. */
export interface RunSandboxWorkerOptions {
  /** The worker's connection to the Temporal frontend. */
  connection: NativeConnection;
  /** Temporal namespace of the task queue. */
  namespace: string;
  taskQueue: string;
  kubernetes: KubernetesClient;
  /** The store the activities and the decider use. */
  store: Store;
  /**
   * The client the decider completes waits with and describes creates with (default: one on
   * `connection` in `namespace`).
   */
  client?: Pick<Client, 'activity' | 'workflow'>;
  /** Where the informers, the decider and the refusal bounds log (a pino logger fits). */
  logger?: InformerLogger;
  /** The create metrics (default: the process's, {@link createMetrics}); the informers' too. */
  metrics?: CreateMetrics;
  /** First back-off delay of the informers, in ms (WATCH_RETRY_DELAY_MS). */
  watchRetryDelayMs: number;
  /** `timeoutSeconds` of the informers' watches (WATCH_TIMEOUT_SECONDS). */
  watchTimeoutSeconds: number;
  /**
   * How long a 401 or an RBAC 403 is retried, in ms, by the informers and by createPod alike
   * (default: the service's, 60 000 each).
   */
  refusalBoundsMs?: Partial<RefusalBoundsMs>;
  /** Why a waited-for pod that no longer exists is gone (SandboxInformers' option). */
  explainMissingPod?: SandboxInformersOptions['explainMissingPod'];
  /**
   * The worker's template catalog (SANDBOX_TEMPLATES, config.templates): the image and pod
   * settings of every create (src/activities/pods.ts), the templates a create is admitted for
   * (src/activities/admission.ts) and the bounds of refusal events (src/verdict/refusal-bounds.ts).
   */
  templates: Record<string, TemplateConfig>;
  /**
   * How webhooks are delivered (WEBHOOK_* variables; default
   * src/activities/webhook-delivery.ts's DEFAULT_WEBHOOK_DELIVERY: no private targets).
   */
  webhooks?: WebhookDeliveryOptions;
  /**
   * TENANT_LIMITS (config.tenantLimits): the fairness weight of the workflows its steps start
   * (src/temporal/priority.ts); unset: weight 1.
   */
  tenantLimits?: TenantLimitsConfig;
  /**
   * The retention settings (config.retention): when set, the worker creates or updates the
   * retention Schedule of its task queue before it starts (src/temporal/retention-schedule.ts).
   * Unset: no Schedule (tests that do not purge).
   */
  retention?: RetentionConfig;
  /** More options of the decider (its intervals and pages; default: the decider's). */
  decider?: Omit<ReadinessDeciderOptions, 'informers' | 'store' | 'client' | 'logger' | 'bounds'>;
  /** More options of the Temporal worker (default: src/worker/temporal-worker.ts's). */
  worker?: Pick<
    TemporalWorkerOptions,
    | 'workflowBundle'
    | 'shutdownGraceTimeMs'
    | 'maxConcurrentActivities'
    | 'maxCachedWorkflows'
    | 'nexus'
  >;
}

/** A worker running in the background, with what it was built from. */
export interface RunningSandboxWorker {
  worker: Worker;
  informers: SandboxInformers;
  decider: ReadinessDecider;
  /** The decider's client (see {@link RunSandboxWorkerOptions.client}). */
  client: Pick<Client, 'activity' | 'workflow'>;
  /**
   * Resolves once the worker has stopped (its `run()` ended) and the decider and informers have
   * stopped after it; rejects with `run()`'s error.
   */
  done: Promise<void>;
  /** Shuts the worker down (if it still runs) and waits for {@link done}. */
  stop(): Promise<void>;
}

/**
 * Starts the informers and the decider, builds the worker ({@link buildTemporalWorker}) and runs
 * it in the background until shut down (SIGINT/SIGTERM, `stop()`, or `worker.shutdown()`).
 * @throws the SDK's errors when the connection or the workflow bundle is unusable (the
 *   informers and the decider are stopped again first), or when the frontend refuses the
 *   retention Schedule (nothing was started yet)
 */
export async function runSandboxWorker(
  options: RunSandboxWorkerOptions,
): Promise<RunningSandboxWorker> {
  const metrics = options.metrics ?? createMetrics();
  const { logger } = options;
  // First, while nothing runs yet: a Schedule the frontend refuses fails the start cleanly.
  if (options.retention) {
    const schedules = new ScheduleClient({
      connection: options.connection,
      namespace: options.namespace,
    });
    const outcome = await ensureRetentionSchedule(schedules, {
      taskQueue: options.taskQueue,
      retention: options.retention,
    });
    logger?.info?.({ task_queue: options.taskQueue, outcome }, 'retention schedule ensured');
  }
  const informers = new SandboxInformers({
    client: options.kubernetes,
    retryDelayMs: options.watchRetryDelayMs,
    watchTimeoutSeconds: options.watchTimeoutSeconds,
    logger,
    observer: metrics.watchObserver,
    unauthorizedBoundMs: options.refusalBoundsMs?.unauthorized,
    forbiddenBoundMs: options.refusalBoundsMs?.permission,
    explainMissingPod: options.explainMissingPod,
  });
  // Decides the recorded readiness waits, this worker's and any other's; stops with the
  // informers.
  const client =
    options.client ?? new Client({ connection: options.connection, namespace: options.namespace });
  const decider = new ReadinessDecider({
    ...options.decider,
    informers,
    store: options.store,
    client,
    logger,
    // What a refusal event may claim: its template's largest disk, no time in the future.
    bounds: new RefusalBounds({ templates: options.templates, logger }),
    // A held wait's refusal teaches its rootfs floor before its outcome is recorded.
    floors: floorLearning(options),
  });
  decider.start();
  informers.start();
  // The pool pods' informer, only when the catalog has a pool: a worker without one watches
  // what it did before.
  const warmPods = Object.values(options.templates).some((template) => template.warm_pool)
    ? new WarmPodInformer({
        client: options.kubernetes,
        retryDelayMs: options.watchRetryDelayMs,
        watchTimeoutSeconds: options.watchTimeoutSeconds,
        logger,
        observer: metrics.watchObserver,
      })
    : undefined;
  warmPods?.start();
  let worker: Worker;
  try {
    worker = await buildTemporalWorker({
      ...options.worker,
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: options.taskQueue,
      deps: {
        kubernetes: options.kubernetes,
        store: options.store,
        templates: options.templates,
        informers,
        decider,
        metrics,
        warmPods,
        refusalBoundsMs: options.refusalBoundsMs,
        webhooks: options.webhooks,
        tenantLimits: options.tenantLimits,
      },
    });
  } catch (err) {
    await decider.stop();
    await informers.stop();
    await warmPods?.stop();
    throw err;
  }
  // Every pool of the catalog, signal-with-started: a second worker only wakes it.
  await startWarmPools({
    client,
    taskQueue: options.taskQueue,
    templates: options.templates,
    logger,
  });
  const done = worker.run().finally(async () => {
    await decider.stop();
    await informers.stop();
    await warmPods?.stop();
  });
  return {
    worker,
    informers,
    decider,
    client,
    done,
    async stop() {
      if (worker.getState() === 'RUNNING') worker.shutdown();
      await done;
    },
  };
}
