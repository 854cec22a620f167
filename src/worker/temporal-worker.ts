/**
 * Builds (does not run) the Temporal SDK `Worker` of the create task queue: the bundled
 * workflows and the real activities over their dependencies. The innermost of the worker's
 * three layers: {@link buildTemporalWorker} builds, `runSandboxWorker` (src/worker/sandbox-worker.ts)
 * runs it with its informers and decider, `serveWorker` (src/worker/serve.ts) serves it as a process.
 */
import { NativeConnection, Worker } from '@temporalio/worker';
import { createActivities, type ActivityDeps } from '../activities/index.js';
import { activityLogIds } from '../activities/log-attributes.js';
import { bundleSandboxWorkflows } from './workflow-bundle.js';
import { sandboxNexusHandler, type SandboxNexusDeps } from '../nexus/sandbox-handler.js';
import { DEFAULT_MAX_CACHED_WORKFLOWS } from '../config/index.js';
import { currentTracing } from '../tracing/spans.js';
import {
  tracingActivityInterceptors,
  tracingSinks,
  tracingWorkflowModules,
} from '../tracing/temporal.js';

/**
 * Activities one worker runs at once. Only short steps hold a slot: a readiness wait holds one
 * for the few ms it takes to record itself, then completes asynchronously (docs/architecture.md,
 * "Waiting costs nothing"), so the number of waiting creates does not count here.
 */
export const MAX_CONCURRENT_ACTIVITIES = 200;

/** Options of {@link buildTemporalWorker}. */
export interface TemporalWorkerOptions {
  connection: NativeConnection;
  namespace: string;
  taskQueue: string;
  deps: ActivityDeps;
  /**
   * A bundle built by src/worker/workflow-bundle.ts (tests build one per run, as a file); default:
   * {@link bundleSandboxWorkflows} now.
   */
  workflowBundle?: { codePath: string } | { code: string };
  /**
   * Time running activities get to finish after shutdown starts before they are cancelled, in
   * ms (default 2000): the readiness wait never finishes by itself, so it should be cancelled
   * (its watches stopped, its attempt retried by another worker) without a long pause.
   */
  shutdownGraceTimeMs?: number;
  /** Activity slots (default {@link MAX_CONCURRENT_ACTIVITIES}); tests set few. */
  maxConcurrentActivities?: number;
  /**
   * Workflows kept in the worker's cache (`MAX_CACHED_WORKFLOWS`, default
   * {@link DEFAULT_MAX_CACHED_WORKFLOWS}; docs/architecture.md, "Workflow cache"). 0: none.
   */
  maxCachedWorkflows?: number;
  /**
   * Serve the `sandbox` Nexus service on this task queue (docs/nexus.md); unset: no Nexus
   * service (NEXUS_TENANTS empty).
   */
  nexus?: SandboxNexusDeps;
}

/**
 * Builds (does not run) the worker. With traces on (src/tracing/sdk.ts) it also runs the
 * OpenTelemetry interceptors and the workflow spans' sink (src/tracing/temporal.ts).
 * @throws the SDK's errors when the connection or the workflow bundle is unusable
 */
export async function buildTemporalWorker(options: TemporalWorkerOptions): Promise<Worker> {
  const tracing = currentTracing();
  return Worker.create({
    connection: options.connection,
    namespace: options.namespace,
    taskQueue: options.taskQueue,
    // The workflow interceptors are in the bundle (src/worker/workflow-bundle.ts), never set here;
    // with traces on, a bundle built here also holds the OpenTelemetry module (a prebuilt one
    // must have been built with it).
    workflowBundle:
      options.workflowBundle ??
      (await bundleSandboxWorkflows(undefined, tracingWorkflowModules(tracing))),
    activities: createActivities(options.deps),
    nexusServices: options.nexus ? [sandboxNexusHandler(options.nexus)] : [],
    interceptors: {
      // The attempt's span first; every activity log line names its operation, sandbox and pod
      // (src/activities/log-attributes.ts).
      activity: [...tracingActivityInterceptors(tracing), activityLogIds],
    },
    sinks: tracingSinks(tracing),
    maxConcurrentActivityTaskExecutions:
      options.maxConcurrentActivities ?? MAX_CONCURRENT_ACTIVITIES,
    maxCachedWorkflows: options.maxCachedWorkflows ?? DEFAULT_MAX_CACHED_WORKFLOWS,
    // Cancellation reaches a heartbeating activity (a delete's wait for its create) only with a
    // heartbeat answer: keep that answer quick.
    maxHeartbeatThrottleInterval: '2 seconds',
    shutdownGraceTime: options.shutdownGraceTimeMs ?? 2_000,
  });
}
