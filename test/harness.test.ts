import { ApplicationFailure } from '@temporalio/common';
import { WorkflowFailedError } from '@temporalio/client';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HarnessActivities } from './support/harness-workflows.js';
import {
  connectToTestServer,
  uniqueTaskQueue,
  type TemporalTestContext,
} from './support/temporal.js';

describe('test harness: a real dev server, a bundled workflow and a worker', () => {
  let temporal: TemporalTestContext;
  const calls: string[] = [];
  const activities: HarnessActivities = {
    async greet(name) {
      calls.push(name);
      if (name === 'fail') {
        throw ApplicationFailure.nonRetryable('greeting refused', 'GreetingRefused', { name });
      }
      return `hello, ${name}`;
    },
  };

  beforeAll(async () => {
    temporal = await connectToTestServer();
  });
  afterAll(async () => {
    await temporal?.close();
  });

  async function runWithWorker<T>(fn: (taskQueue: string) => Promise<T>): Promise<T> {
    const taskQueue = uniqueTaskQueue('harness');
    const worker = await Worker.create({
      connection: temporal.nativeConnection,
      taskQueue,
      workflowBundle: temporal.workflowBundle,
      activities,
    });
    return worker.runUntil(fn(taskQueue));
  }

  it('runs a workflow whose activity result comes back', async () => {
    const result = await runWithWorker((taskQueue) =>
      temporal.client.workflow.execute('harnessGreeting', {
        taskQueue,
        workflowId: `harness-ok-${taskQueue}`,
        args: ['sandbox'],
      }),
    );
    expect(result).toBe('hello, sandbox');
  });

  it('fails the workflow on a non-retryable ApplicationFailure without retrying the activity', async () => {
    calls.length = 0;
    const error = await runWithWorker((taskQueue) =>
      temporal.client.workflow
        .execute('harnessGreeting', {
          taskQueue,
          workflowId: `harness-fail-${taskQueue}`,
          args: ['fail'],
        })
        .then(
          () => undefined,
          (err: unknown) => err,
        ),
    );
    expect(error).toBeInstanceOf(WorkflowFailedError);
    const activityFailure = (error as WorkflowFailedError).cause?.cause;
    expect(activityFailure).toBeInstanceOf(ApplicationFailure);
    expect((activityFailure as ApplicationFailure).type).toBe('GreetingRefused');
    expect((activityFailure as ApplicationFailure).nonRetryable).toBe(true);
    // One attempt only: the retry policy allows 5, so a retry would show here.
    expect(calls).toEqual(['fail']);
  });
});
