/**
 * The workflow bundle: the workflow code and its interceptor modules, bundled once, the one way
 * every worker (`npm run worker`, `npm start`, the tests) gets its workflows. Temporal
 * recommends a prebuilt bundle in production; building it here, with the interceptor modules
 * always included, means no worker can run the workflows without them. Source: Temporal
 * TypeScript SDK, `bundleWorkflowCode` and `WorkerOptions.workflowBundle`.
 */
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode } from '@temporalio/worker';

/** Path of the production workflow entry point. */
export const WORKFLOWS_PATH = fileURLToPath(new URL('../workflows/index.ts', import.meta.url));

/**
 * Workflow interceptor modules, bundled with the workflows: activity summaries for the Temporal
 * UI (src/workflows/activity-summaries.ts), and the mark on an expected failure's closing log line
 * (src/workflows/expected-failure-logs.ts).
 */
export const WORKFLOW_INTERCEPTOR_MODULES = [
  fileURLToPath(new URL('../workflows/activity-summaries.ts', import.meta.url)),
  fileURLToPath(new URL('../workflows/expected-failure-logs.ts', import.meta.url)),
];

/**
 * The failure converter bundled with the workflows: no failure a workflow reports carries a
 * stack trace (src/workflows/failure-converter.ts).
 */
export const FAILURE_CONVERTER_PATH = fileURLToPath(
  new URL('../workflows/failure-converter.ts', import.meta.url),
);

/** A bundle as `Worker.create({ workflowBundle })` takes it: the code itself. */
export interface WorkflowBundle {
  code: string;
}

/**
 * Bundles the workflows with {@link WORKFLOW_INTERCEPTOR_MODULES} and the failure converter of
 * {@link FAILURE_CONVERTER_PATH} (a few seconds of webpack).
 * @param workflowsPath the entry point (default {@link WORKFLOWS_PATH}; tests add test-only
 *   workflows with their own entry point that re-exports the production ones)
 * @param extraInterceptorModules more workflow interceptor modules, after ours (the
 *   OpenTelemetry one when traces are on: src/tracing/temporal.ts)
 * @throws the bundler's error when the workflow code does not compile
 */
export async function bundleSandboxWorkflows(
  workflowsPath: string = WORKFLOWS_PATH,
  extraInterceptorModules: readonly string[] = [],
): Promise<WorkflowBundle> {
  const { code } = await bundleWorkflowCode({
    workflowsPath,
    workflowInterceptorModules: [...WORKFLOW_INTERCEPTOR_MODULES, ...extraInterceptorModules],
    failureConverterPath: FAILURE_CONVERTER_PATH,
    // The bundler's progress lines are noise in a service's log; its errors are thrown.
    logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} },
  });
  return { code };
}
