/** A minimal workflow used only to prove the test harness (test/harness.test.ts). */
import { proxyActivities } from '@temporalio/workflow';

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
