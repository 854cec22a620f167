/**
 * A test stack for one suite: a simulated cluster (over HTTP), a temporary store (SQLite, or a
 * fresh schema in PostgreSQL), and a worker on its own task queue connected to the run's shared
 * dev server.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Worker } from '@temporalio/worker';
import { pino, type Logger } from 'pino';
import type { ReadinessDeciderOptions } from '../../src/verdict/readiness-decider.js';
import type { RefusalBoundsMs } from '../../src/activities/pods.js';
import type { WebhookDeliveryOptions } from '../../src/activities/webhook-delivery.js';
import { createKubernetesClient, type KubernetesClient } from '../../src/kubernetes/client.js';
import {
  SimulatedCluster,
  type SimulatedClusterOptions,
} from '../../environments/simulated-cluster/index.js';
import { openStore, type Store, type StoreOptions } from '../../src/store/index.js';
import { runSandboxWorker } from '../../src/worker/sandbox-worker.js';
import {
  DEFAULT_TEMPLATES,
  type TemplateConfig,
  type TenantLimitsConfig,
} from '../../src/config/index.js';
import type { RetentionConfig } from '../../src/config/retention.js';
import { freshPostgresTarget, type StoreTarget } from './store.js';
import {
  connectToTestServer,
  routeSdkLogsTo,
  uniqueTaskQueue,
  type TemporalTestContext,
} from './temporal.js';

/** Options of {@link startTestStack}. */
export interface TestStackOptions {
  cluster?: SimulatedClusterOptions;
  /**
   * Run on another apiserver (the real tier, test/support/real-tier.ts) instead of a simulated
   * cluster: the service's kubeconfig and its namespace. `stack.cluster` then throws.
   */
  apiserver?: { kubeconfigYaml: string; namespace: string };
  /** First back-off delay of the informers, in ms (default 100: tests re-open fast). */
  watchRetryDelayMs?: number;
  /** `timeoutSeconds` of the informers' watches (default 25). */
  watchTimeoutSeconds?: number;
  /**
   * The worker's template catalog (default: the service's, `base` only); the API stack passes
   * its SANDBOX_TEMPLATES, as a deployment gives both processes the same one. It also bounds
   * the refusal events the deciders believe (src/verdict/refusal-bounds.ts), as in src/worker/serve.ts.
   */
  templates?: Record<string, TemplateConfig>;
  /** Start a worker (default true). */
  worker?: boolean;
  /**
   * A `postgres://` URL of a database the stack may create a schema in: the store then lives in
   * a fresh schema there, dropped by `stop()`. Unset (default): SQLite in `dataDir`.
   */
  databaseUrl?: string;
  /** Wraps the store the activities see, e.g. to slow or fail one call (default: as is). */
  activityStore?: (store: Store) => Store;
  /**
   * Whether the worker records the rootfs floors refusals teach (default true). Suites that send
   * the same too-small create again and again to watch the node refuse it set false: with a
   * learned floor the API would refuse it before 202 (test/rootfs-floors.test.ts covers that).
   */
  learnRootfsFloors?: boolean;
  /** How the workers deliver webhooks (default: the service's, no private targets). */
  webhooks?: WebhookDeliveryOptions;
  /** The workers' TENANT_LIMITS (fairness weights of what their steps start; default: none). */
  tenantLimits?: TenantLimitsConfig;
  /**
   * The workers' retention settings: each worker ensures the retention Schedule of the stack's
   * task queue at start (src/temporal/retention-schedule.ts). Default: none, no Schedule.
   */
  retention?: RetentionConfig;
  /** The workers' activity slots (default: the worker's, MAX_CONCURRENT_ACTIVITIES). */
  maxConcurrentActivities?: number;
  /**
   * How long the worker retries a 401 or an RBAC 403 before it gives up, in ms, for createPod
   * and the informers alike (default: the service's, 60 000 each).
   */
  refusalBoundsMs?: Partial<RefusalBoundsMs>;
  /**
   * The deciders' periodic reconcile, in ms (default: the decider's, 60 000); a test that must
   * not be rescued by it sets it longer than the test.
   */
  reconcileIntervalMs?: number;
  /**
   * More options of the worker's decider (src/verdict/readiness-decider.ts), e.g. small pages
   * (default: the decider's).
   */
  decider?: Pick<
    ReadinessDeciderOptions,
    'reconcilePageSize' | 'podReadDelayMs' | 'otherWaitDelayMs'
  >;
}

/** What a suite gets. */
export interface TestStack {
  temporal: TemporalTestContext;
  cluster: SimulatedCluster;
  kubernetes: KubernetesClient;
  store: Store;
  /** How `store` was opened, e.g. to open a second store on the same database. */
  storeOptions: StoreOptions;
  taskQueue: string;
  namespace: string;
  logger: Logger;
  /** Warnings the activities logged, for assertions. */
  warnings: Array<Record<string, unknown>>;
  /** Every line the activities logged (parsed pino JSON), for assertions. */
  logs: Array<Record<string, unknown>>;
  dataDir: string;
  /** The workers' template catalog: a test may change it (as an operator changes SANDBOX_TEMPLATES). */
  templates: Record<string, TemplateConfig>;
  worker?: Worker;
  /** Starts a worker for this stack's task queue (running in the background). */
  startWorker(): Promise<Worker>;
  /** Stops the worker (if any), the cluster, the store and the connections. */
  stop(): Promise<void>;
}

/** Starts a stack; call `stop()` in afterAll. */
export async function startTestStack(options: TestStackOptions = {}): Promise<TestStack> {
  const temporal = await connectToTestServer();
  const cluster = options.apiserver
    ? noSimulatedCluster()
    : await SimulatedCluster.start(options.cluster);
  const namespace = options.apiserver?.namespace ?? 'sandboxes';
  const kubernetes = createKubernetesClient({
    kubeconfigYaml: options.apiserver?.kubeconfigYaml ?? cluster.kubeconfigYaml(),
    namespace,
  });
  const dataDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-test-'));
  const postgres: StoreTarget | undefined = options.databaseUrl
    ? await freshPostgresTarget(options.databaseUrl)
    : undefined;
  const storeOptions = postgres?.options ?? { sqliteFile: join(dataDir, 'store.db') };
  const store = await openStore(storeOptions);
  const warnings: Array<Record<string, unknown>> = [];
  const logs: Array<Record<string, unknown>> = [];
  const logger = pino(
    { level: 'info' },
    {
      write(line: string) {
        const entry = JSON.parse(line) as Record<string, unknown>;
        logs.push(entry);
        if ((entry.level as number) >= 40) warnings.push(entry);
        if (process.env.TEST_LOGS) process.stderr.write(line);
      },
    },
  );
  routeSdkLogsTo(logger);
  const taskQueue = uniqueTaskQueue('create');
  const running: Array<{ worker: Worker; done: Promise<void> }> = [];

  const stack: TestStack = {
    temporal,
    cluster,
    kubernetes,
    store,
    storeOptions,
    taskQueue,
    namespace,
    logger,
    warnings,
    logs,
    dataDir,
    templates: { ...(options.templates ?? DEFAULT_TEMPLATES) },
    async startWorker() {
      // Built as every worker is (src/worker/sandbox-worker.ts), over the stack's store as the
      // activities see it.
      const started = await runSandboxWorker({
        connection: temporal.nativeConnection,
        namespace: 'default',
        taskQueue,
        kubernetes,
        store: withoutLearning(
          options.activityStore ? options.activityStore(store) : store,
          options.learnRootfsFloors === false,
        ),
        client: temporal.client,
        logger,
        watchRetryDelayMs: options.watchRetryDelayMs ?? 100,
        watchTimeoutSeconds: options.watchTimeoutSeconds ?? 25,
        refusalBoundsMs: options.refusalBoundsMs,
        templates: stack.templates,
        webhooks: options.webhooks,
        tenantLimits: options.tenantLimits,
        retention: options.retention,
        decider: { reconcileIntervalMs: options.reconcileIntervalMs, ...options.decider },
        worker: {
          workflowBundle: temporal.workflowBundle,
          shutdownGraceTimeMs: 2_000,
          maxConcurrentActivities: options.maxConcurrentActivities,
        },
      });
      const { worker } = started;
      running.push({ worker, done: started.done });
      stack.worker = worker;
      return worker;
    },
    async stop() {
      for (const { worker, done } of running) {
        if (worker.getState() === 'RUNNING') worker.shutdown();
        await done.catch(() => undefined);
      }
      if (!options.apiserver) await cluster.close();
      await store.close();
      await postgres?.dispose();
      await temporal.close();
      routeSdkLogsTo(undefined);
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
  if (options.worker ?? true) await stack.startWorker();
  return stack;
}

/** Stands in for `stack.cluster` on a stack over another apiserver: any use throws. */
function noSimulatedCluster(): SimulatedCluster {
  return new Proxy({} as SimulatedCluster, {
    get(_target, property) {
      throw new Error(
        `stack.cluster.${String(property)}: this stack runs on another apiserver, not a simulated cluster`,
      );
    },
  });
}

/** The store as the activities see it; with `forget`, recording a floor writes nothing. */
function withoutLearning(store: Store, forget: boolean): Store {
  if (!forget) return store;
  return Object.assign(Object.create(store) as Store, {
    recordRootfsFloor: async () => false,
  });
}
