/**
 * A time-skipping test environment on the test server of ./locate.ts, for workflow tests with
 * stubbed activities (docs/testing.md, "The fast tier").
 *
 * The SDK's core waits a fixed 5 s for the server it launched to accept connections ("ephemeral
 * server at … did not start within 5s"), and this test server is a JVM: on a loaded 2-core
 * machine its start can take longer. A start that times out that way is tried again (the SDK
 * stops the process it launched); any other error is thrown at once.
 */
import { TestWorkflowEnvironment } from '@temporalio/testing';
import { locateTestServer } from './locate.js';

/** How many starts are tried before the last one's error is thrown. */
export const TIME_SKIPPING_START_ATTEMPTS = 4;

/**
 * Starts a time-skipping environment (`TestWorkflowEnvironment.createTimeSkipping`) on the
 * located test server.
 * @throws the SDK's error when every start timed out, or at once on any other error (e.g. the
 *   test server could not be located or fetched: see {@link locateTestServer})
 */
export async function startTimeSkippingEnvironment(): Promise<TestWorkflowEnvironment> {
  const path = await locateTestServer();
  for (let attempt = 1; ; attempt++) {
    try {
      return await TestWorkflowEnvironment.createTimeSkipping({
        server: { executable: { type: 'existing-path', path } },
      });
    } catch (err) {
      const slowStart = /did not start within/.test(String(err));
      if (!slowStart || attempt >= TIME_SKIPPING_START_ATTEMPTS) throw err;
    }
  }
}
