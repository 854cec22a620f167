/**
 * The worker container's health check (worker/healthcheck.ts) against the run's dev server: a
 * polling worker on this host is healthy; another task queue or another host is not.
 */
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWorkerPolling } from '../worker/healthcheck.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { until } from './support/until.js';

let stack: TestStack;
beforeAll(async () => {
  stack = await startTestStack();
});
afterAll(async () => {
  await stack?.stop();
});

function check(overrides: { taskQueue?: string; host?: string } = {}) {
  return checkWorkerPolling({
    connection: stack.temporal.client.connection,
    namespace: 'default',
    taskQueue: overrides.taskQueue ?? stack.taskQueue,
    host: overrides.host,
  });
}

describe('worker health check', () => {
  it('is healthy while a worker on this host polls the task queue', async () => {
    await until(async () => (await check()).healthy);
    expect(await check()).toEqual({ healthy: true });
  });

  it('is unhealthy for a task queue nobody polls, naming the queue', async () => {
    expect(await check({ taskQueue: 'nobody-polls-this' })).toEqual({
      healthy: false,
      reason: expect.stringContaining('task queue nobody-polls-this'),
    });
  });

  it('is unhealthy when only workers on other hosts poll', async () => {
    await until(async () => (await check()).healthy);
    expect((await check({ host: 'another-host' })).healthy).toBe(false);
  });

  it('exits 0 as a command when healthy and 1 with the reason when not', async () => {
    const run = (taskQueue: string) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'worker/healthcheck.ts'], {
        env: {
          ...process.env,
          TEMPORAL_ADDRESS: stack.temporal.address,
          TEMPORAL_TASK_QUEUE: taskQueue,
        },
        encoding: 'utf8',
        timeout: 60_000,
      });
    await until(async () => (await check()).healthy);
    expect(run(stack.taskQueue).status).toBe(0);
    const unhealthy = run('nobody-polls-this');
    expect(unhealthy.status).toBe(1);
    expect(unhealthy.stderr).toContain(`no worker on host ${hostname()}`);
  });
});
