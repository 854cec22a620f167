/**
 * Counts the promises a workflow makes in the workflow sandbox (issue 50): the Temporal TypeScript
 * SDK captures and formats a stack trace for every one of them (1.24, `@temporalio/worker`
 * lib/workflow/vm-shared.js, `setPromiseHook`), so each costs the worker CPU on every run. Used by
 * tools/bench/workflow-promises.ts and test/workflow-promises.test.ts.
 */
import { promiseHooks } from 'node:v8';
import type { temporal } from '@temporalio/proto';
import { Worker } from '@temporalio/worker';

/** A workflow history as `Worker.runReplayHistory` takes it. */
export type History = temporal.api.history.v1.IHistory;

/**
 * Counts the promises created in a workflow's context from now until `stop()`: those whose
 * realm has a `__TEMPORAL_ACTIVATOR__`, the test the SDK's own promise hook makes
 * (vm-shared.js `getActivator`). Promises of the worker itself are left out. Only workflows run
 * in this thread are seen (a replay worker's, or any worker's in debug mode).
 * @returns `stop()`, which removes the hook, and `count()`, the promises counted so far
 */
export function countWorkflowPromises(): { stop(): void; count(): number } {
  let count = 0;
  const stopHook = promiseHooks.onInit((promise) => {
    const realmFunction = promise.constructor.constructor as FunctionConstructor;
    if (realmFunction('return globalThis.__TEMPORAL_ACTIVATOR__')() !== undefined) count += 1;
  });
  return { stop: () => stopHook(), count: () => count };
}

/**
 * Replays `history` with `bundle` in this thread (a replay worker runs in debug mode) and counts
 * its workflow's promises.
 * @param bundle the workflow bundle: its code, or the path of its file
 * @returns the count
 * @throws DeterminismViolationError when the code does not replay the history
 */
export async function promisesOfReplay(
  bundle: { code: string } | { codePath: string },
  history: History,
): Promise<number> {
  const counter = countWorkflowPromises();
  try {
    await Worker.runReplayHistory({ workflowBundle: bundle }, history);
  } finally {
    // The hook never outlives the replay, whether it replays or not.
    counter.stop();
  }
  return counter.count();
}
