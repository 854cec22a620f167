/**
 * Builds the Temporal worker of the create task queue: the bundled workflows and the real
 * activities over their dependencies.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities/index.js';
import { activityLogIds } from '../activities/log-attributes.js';
import { currentTracing } from '../tracing/spans.js';
import {
  tracingActivityInterceptors,
  tracingSinks,
  tracingWorkflowModules,
} from '../tracing/temporal.js';

/** Path of the workflow entry point, bundled by the worker at start. */
export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Workflow interceptor modules: activity summaries for the Temporal UI. A prebuilt bundle must
 * be built with them (`bundleWorkflowCode({ workflowInterceptorModules })`).
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  fileURLToPath(new URL('../workflows/activity-summaries.ts', import.meta.url)),
];

/**
 * Activities one worker runs at once: up to this many creates can wait for their pods on one
 * worker (measured: 1,000 waits on one worker, README "Benchmark").
 */
export const MAX_CONCURRENT_ACTIVITIES = 2_000;

/** Options of {@link createSandboxWorker}. */
export interface SandboxWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /** A prebuilt bundle (tests bundle once per run); default: bundle {@link WORKFLOWS_PATH}. */
  workflowBundle?: { codePath: string };
  /**
   * Time running activities get to finish after shutdown starts before they are cancelled, in
   * ms (default 2000): the readiness wait never finishes by itself, so it should be cancelled
   * (its watches stopped, its attempt retried by another worker) without a long pause.
   */
  shutdownGraceTimeMs?: number;
}

/**
 * Creates (does not run) the worker. With traces on (tracing/sdk.ts) it also runs the
 * OpenTelemetry interceptors and the workflow spans' sink (tracing/temporal.ts).
 * @throws the SDK's errors when the connection or the workflow bundle is unusable
 */
export async function createSandboxWorker(options: SandboxWorkerOptions): Promise<Worker> {
  const tracing = currentTracing();
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : { workflowsPath: WORKFLOWS_PATH }),
    activities: createActivities(options.deps),
    // One object for both kinds: a second `interceptors` key would replace the first.
    interceptors: {
      // Bundled only when the worker bundles the workflows; a prebuilt bundle has its own.
      ...(options.workflowBundle
        ? {}
        : {
            workflowModules: [...WORKFLOW_INTERCEPTOR_MODULES, ...tracingWorkflowModules(tracing)],
          }),
      // The attempt's span first; every activity log line names its operation, sandbox and pod
      // (activities/log-attributes.ts).
      activity: [...tracingActivityInterceptors(tracing), activityLogIds],
    },
    sinks: tracingSinks(tracing),
    // A readiness wait holds an activity slot while it waits (it costs no request: the
    // informers serve it), so a worker takes many at once; the SDK's default is 100.
    maxConcurrentActivityTaskExecutions: MAX_CONCURRENT_ACTIVITIES,
    // Cancellation reaches an activity only with a heartbeat answer: keep that answer quick.
    maxHeartbeatThrottleInterval: '2 seconds',
    shutdownGraceTime: options.shutdownGraceTimeMs ?? 2_000,
  });
}
