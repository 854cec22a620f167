/**
 * What an operator reads when a node refuses a create (docs/observability.md, "Logs"): the
 * refusal is the caller's error, the service working as intended, so the real worker process
 * (`npm run worker`'s src/worker/main.ts) writes one info line naming the reason, the node and the
 * ids, and no warning: neither the SDK's `Activity failed` nor its `Workflow failed` with their
 * stack traces. Read from the process's own stdout (pino JSON lines).
 */
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../tools/release-before.js';
import { startWorkerProcess, type WorkerProcess } from '../tools/worker-process.js';
import { settle, startCreate } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { waitUntil } from '../tools/wait-until.js';

let stack: TestStack;
let worker: WorkerProcess;

beforeAll(async () => {
  stack = await startTestStack({ cluster: { startupDelayMs: 100 }, worker: false });
  const kubeconfig = join(stack.dataDir, 'kubeconfig');
  stack.cluster.writeKubeconfig(kubeconfig);
  worker = await startWorkerProcess({
    cwd: REPO_ROOT,
    temporalAddress: stack.temporal.address,
    taskQueue: stack.taskQueue,
    kubeconfig,
    dataDir: stack.dataDir,
  });
}, 300_000);

afterAll(async () => {
  await worker?.kill();
  await stack?.stop();
});

/** The worker's JSON log lines that name the workflow (operation) `id`. */
function linesOf(id: string): Array<Record<string, unknown>> {
  return worker
    .output()
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .filter((line) => line.operation_id === id || line.workflowId === id);
}

describe('the worker log of a node refusal', () => {
  it('is one info line with the reason, the node and the ids, and no warning', async () => {
    const { handle, input } = await startCreate(stack, { diskMib: 300 });
    const { error } = await settle(handle.result());
    expect(error).toBeDefined();
    // The last line of the create: its execution retired after the compensation.
    await waitUntil(
      () => linesOf(input.operationId).some((line) => line.msg === 'execution retired'),
      { timeoutMs: 30_000 },
    );
    const lines = linesOf(input.operationId);
    const refusals = lines.filter((line) =>
      String(line.msg).startsWith('node refused the pod as invalid'),
    );
    expect(refusals, JSON.stringify(lines, null, 1)).toHaveLength(1);
    expect(refusals[0]).toMatchObject({
      level: 30,
      reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
      node_name: expect.any(String),
      operation_id: input.operationId,
      sandbox_id: input.sandboxId,
      pod_uid: expect.any(String),
    });
    const warnings = lines.filter((line) => Number(line.level) >= 40);
    expect(warnings.map((line) => line.msg)).toEqual([]);
    expect(lines.filter((line) => JSON.stringify(line).includes('"stack"'))).toEqual([]);
  });
});
