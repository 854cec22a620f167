/**
 * Builds the Temporal worker of the create task queue: the bundled workflows and the real
 * activities over their dependencies.
 */
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities/index.js';
import { activityLogIds } from '../activities/log-attributes.js';

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
 * worker (measured: 1,000 waits on one worker, docs/benchmarks.md).
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
 * Creates (does not run) the worker.
 * @throws the SDK's errors when the connection or the workflow bundle is unusable
 */
export async function createSandboxWorker(options: SandboxWorkerOptions): Promise<Worker> {
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    ...(options.workflowBundle
      ? { workflowBundle: options.workflowBundle }
      : {
          workflowsPath: WORKFLOWS_PATH,
          interceptors: { workflowModules: WORKFLOW_INTERCEPTOR_MODULES },
        }),
    activities: createActivities(options.deps),
    // Every activity log line names its operation, sandbox and pod (activities/log-attributes.ts).
    interceptors: { activity: [activityLogIds] },
    // A readiness wait holds an activity slot while it waits (it costs no request: the
    // informers serve it), so a worker takes many at once; the SDK's default is 100.
    maxConcurrentActivityTaskExecutions: MAX_CONCURRENT_ACTIVITIES,
    // Cancellation reaches an activity only with a heartbeat answer: keep that answer quick.
    maxHeartbeatThrottleInterval: '2 seconds',
    shutdownGraceTime: options.shutdownGraceTimeMs ?? 2_000,
  });
}
