/** Minimal workflows of the test harness (test/harness.test.ts, test/waiting-costs-nothing.test.ts). */
import { proxyActivities } from '@temporalio/workflow';
import { readinessWaitActivityId } from '../../contract/index.js';

/** The activity interface the harness workflow calls. */
export interface HarnessActivities {
  /** Returns `hello, <name>`, or throws a non-retryable `ApplicationFailure` when name is "fail". */
  greet(name: string): Promise<string>;
}

const { greet } = proxyActivities<HarnessActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { maximumAttempts: 5, initialInterval: '100 ms' },
});

/** Calls `greet` once and returns its result. */
export async function harnessGreeting(name: string): Promise<string> {
  return greet(name);
}

/**
 * Schedules the readiness wait of the pod `podUid` the way the create workflow does (activity
 * `awaitPodReady`, activity id from contract/readiness-wait.ts) on `taskQueue`, which a test
 * leaves without a worker: the attempt is scheduled and never started, so only a completion by
 * id (src/verdict/readiness-decider.ts) can decide it. Returns the wait's result.
 */
export async function harnessUnstartedWait(input: {
  podUid: string;
  taskQueue: string;
}): Promise<{ podIp: string }> {
  const { awaitPodReady } = proxyActivities<{ awaitPodReady(): Promise<{ podIp: string }> }>({
    taskQueue: input.taskQueue,
    activityId: readinessWaitActivityId(input.podUid),
    startToCloseTimeout: '5 minutes',
  });
  return awaitPodReady();
}
