/**
 * What a refused create leaves behind once its wait is decided, as a new user would see it: no
 * read of the pod by name after the decision (the decider's delayed read is cancelled), and a
 * workflow failure without a stack trace (src/workflows/failure-converter.ts), read from the real
 * dev server's history.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { settle, startCreate } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';

/** The decider's delayed read by name, shortened so a test can wait past it. */
const POD_READ_DELAY_MS = 2_000;

let stack: TestStack;
beforeAll(async () => {
  // The node refuses about 1 s after the pod starts: the wait is recorded and tracked first.
  stack = await startTestStack({
    cluster: { startupDelayMs: 1_000 },
    decider: { podReadDelayMs: POD_READ_DELAY_MS },
  });
});
afterAll(async () => {
  await stack?.stop();
});

/** A refused create (300 MiB disk), settled: its input, its pod's name and its failure. */
async function refusedCreate() {
  const { handle, input } = await startCreate(stack, { diskMib: 300 });
  const { error } = await settle(handle.result());
  expect(error).toBeInstanceOf(WorkflowFailedError);
  const podName = (await stack.store.getSandboxById(input.sandboxId))?.pod.name ?? '';
  expect(podName).not.toBe('');
  return { handle, input, podName };
}

describe('a decided readiness wait', () => {
  it('reads its pod by name no more once the wait is decided, waiting longer than the read delay', async () => {
    const { input, podName } = await refusedCreate();
    const lines = stack.logs.filter((line) => line.operation_id === input.operationId);
    // The wait went asynchronous, so the decider armed its delayed read (src/verdict/readiness-wait.ts).
    expect(lines.map((line) => line.msg)).toContain(
      'waiting for the pod; the informers complete the wait',
    );
    const decided = lines.find((line) => /wait failed$/.test(String(line.msg)));
    expect(decided, 'the decider failed the wait').toBeDefined();
    const decidedAt = decided?.time as number;
    // A sleep: that no read comes after the decision is what is proved, past the read delay.
    await new Promise((resolve) => setTimeout(resolve, POD_READ_DELAY_MS + 1_500));
    const readsAfter = stack.cluster.requestsWhere({
      verb: 'get',
      resource: 'pods',
      name: podName,
      since: decidedAt,
    });
    expect(
      readsAfter.map((request) => `${request.status} ${request.path}`),
      'GETs of the pod after the decision',
    ).toEqual([]);
  });

  it("reports the create's failure, and every cause, without a stack trace in history", async () => {
    const { handle } = await refusedCreate();
    const history = await handle.fetchHistory();
    const failed = (history.events ?? []).find(
      (event) =>
        event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    )?.workflowExecutionFailedEventAttributes?.failure;
    expect(failed?.applicationFailureInfo?.type).toBe('InvalidRequest');
    const chain: Array<{ message?: string | null; stackTrace?: string | null }> = [];
    for (let failure = failed; failure; failure = failure.cause) chain.push(failure);
    expect(chain[0]?.message).toMatch(/rootfs_size_mb=300/);
    expect(chain.map((failure) => [failure.message, failure.stackTrace ?? ''])).toEqual(
      chain.map((failure) => [failure.message, '']),
    );
  });
});
