/**
 * The worker container's health check (src/worker/healthcheck.ts) against the run's dev server: a
 * polling worker on this host is healthy; another task queue or another host is not; as a
 * command it also checks the search attributes and the cluster (the simulated apiserver).
 */
import { execFile } from 'node:child_process';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkWorkerPolling } from '../src/worker/healthcheck.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

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
    await waitUntil(async () => (await check()).healthy);
    expect(await check()).toEqual({ healthy: true });
  });

  it('is unhealthy for a task queue nobody polls, naming the queue', async () => {
    expect(await check({ taskQueue: 'nobody-polls-this' })).toEqual({
      healthy: false,
      reason: expect.stringContaining('task queue nobody-polls-this'),
    });
  });

  it('is unhealthy when only workers on other hosts poll', async () => {
    await waitUntil(async () => (await check()).healthy);
    expect((await check({ host: 'another-host' })).healthy).toBe(false);
  });

  it('exits 0 as a command when healthy and 1 with the reason when not', async () => {
    const kubeconfig = join(stack.dataDir, 'healthcheck-kubeconfig');
    stack.cluster.writeKubeconfig(kubeconfig);
    // Asynchronous: the simulated apiserver answering the check runs in this process.
    const run = (taskQueue: string) =>
      new Promise<{ status: number | null; stderr: string }>((resolve) => {
        execFile(
          process.execPath,
          ['--import', 'tsx', 'src/worker/healthcheck.ts'],
          {
            env: {
              ...process.env,
              TEMPORAL_ADDRESS: stack.temporal.address,
              TEMPORAL_TASK_QUEUE: taskQueue,
              KUBECONFIG: kubeconfig,
              SANDBOX_NAMESPACE: stack.namespace,
            },
            encoding: 'utf8',
            timeout: 60_000,
          },
          (err, _stdout, stderr) =>
            resolve({ status: err ? ((err as { code?: number }).code ?? 1) : 0, stderr }),
        );
      });
    await waitUntil(async () => (await check()).healthy);
    const healthy = await run(stack.taskQueue);
    expect(healthy.status, healthy.stderr).toBe(0);
    const unhealthy = await run('nobody-polls-this');
    expect(unhealthy.status).toBe(1);
    expect(unhealthy.stderr).toContain(`no worker on host ${hostname()}`);
    // The cluster is checked too: a permission of deploy/rbac.yaml the account lacks is named.
    stack.cluster.faults.deny('watch', 'pods', true);
    try {
      const denied = await run(stack.taskQueue);
      expect(denied.status).toBe(1);
      expect(denied.stderr).toContain(
        'unhealthy: the service account may not watch pods in namespace "sandboxes" (apply deploy/rbac.yaml)',
      );
    } finally {
      stack.cluster.faults.deny('watch', 'pods', false);
    }
  });
});
