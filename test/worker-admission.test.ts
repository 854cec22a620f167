/**
 * What the worker trusts (docs/security.md): a workflow started directly on Temporal, by anyone
 * but the API, with a foreign image, tenant, generation or sandbox makes no pod, touches no
 * store row and fails NotAdmitted; a forged delete cancels and deletes nothing; the pod's image is
 * the worker's catalog's whatever the input names; and the API never shows a tenant an
 * operation its store does not hold. Real dev server, simulated cluster over HTTP.
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { newOperationId, newSandboxId } from '../contract/ids.js';
import type { OperationMemo } from '../src/temporal/operation-memo.js';
import type { CreateSandboxInput } from '../contract/index.js';
import type { createSandbox } from '../src/workflows/create-sandbox.js';
import type { deleteSandbox } from '../src/workflows/delete-sandbox.js';
import type { DeleteSandboxInput } from '../contract/delete-workflow.js';
import { operationSearchAttributes } from '../src/temporal/search-attribute-keys.js';
import { bearer, createBody, finishedCreate, startApiStack, type ApiStack } from './support/api.js';
import { createInput, startCreate, storeSandbox } from './support/creates.js';

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack();
}, 120_000);
afterAll(async () => {
  await api?.stop();
});

/** The pod creates and deletes the simulated cluster served, from `since` on (epoch ms). */
function podWrites(since: number) {
  return api.stack.cluster.requestsWhere({
    verb: ['create', 'delete', 'deletecollection'],
    resource: 'pods',
    namespace: 'sandboxes',
    since,
  });
}

/** Starts a create straight on Temporal, as anyone who reaches the frontend could. */
async function startForgedCreate(
  input: CreateSandboxInput,
): Promise<WorkflowHandle<typeof createSandbox>> {
  const memo: OperationMemo = {
    type: 'sandbox.create',
    sandboxId: input.sandboxId,
    tenantId: input.tenantId,
    deadlineMs: input.deadlineMs,
  };
  return api.stack.temporal.client.workflow.start<typeof createSandbox>('createSandbox', {
    workflowId: input.operationId,
    taskQueue: api.stack.taskQueue,
    args: [input],
    typedSearchAttributes: operationSearchAttributes(input, 'create'),
    memo: { ...memo },
  });
}

/** The workflow's failure: asserts it is the non-retryable NotAdmitted one and returns it. */
async function notAdmitted(handle: WorkflowHandle): Promise<ApplicationFailure> {
  const error: unknown = await handle.result().then(
    () => new Error('the workflow succeeded'),
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  const cause = (error as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  expect((cause as ApplicationFailure).type).toBe('NotAdmitted');
  expect((cause as ApplicationFailure).nonRetryable).toBe(true);
  return cause as ApplicationFailure;
}

/** A sandbox stored for `tenant-a` as the API stores one (row first), not started. */
async function storedSandbox(): Promise<CreateSandboxInput> {
  const input = createInput();
  await storeSandbox(api.stack.store, input);
  return input;
}

describe('the worker trusts only what the service decided', () => {
  it('a create of a sandbox the store does not hold, with a foreign image, makes no pod and fails NotAdmitted', async () => {
    const since = Date.now();
    const handle = await startForgedCreate(
      createInput({ tenantId: 'mallory', image: 'evil.example/miner:latest' }),
    );
    const failure = await notAdmitted(handle);
    expect(failure.message).toMatch(
      /^refused to create sandbox sbx_\w+: the store holds no such sandbox; the worker carries out only a create the service's API accepted$/,
    );
    expect(podWrites(since), 'the cluster saw a pod write').toEqual([]);
  });

  it("a create naming another tenant's stored sandbox makes no pod, writes nothing and fails NotAdmitted", async () => {
    const victim = await storedSandbox();
    const since = Date.now();
    const handle = await startForgedCreate({ ...victim, tenantId: 'mallory' });
    expect((await notAdmitted(handle)).message).toContain('it does not belong to tenant mallory');
    expect(podWrites(since)).toEqual([]);
    const sandbox = await api.stack.store.getSandboxById(victim.sandboxId);
    expect(sandbox).toMatchObject({ state: 'creating', failure: null, pod: { uid: null } });
  });

  it('a create naming another generation of a stored sandbox makes no pod and fails NotAdmitted', async () => {
    const victim = await storedSandbox();
    const since = Date.now();
    const handle = await startForgedCreate({ ...victim, generation: 2 });
    expect((await notAdmitted(handle)).message).toContain('it is at generation 1, not 2');
    expect(podWrites(since)).toEqual([]);
    expect(await api.stack.store.getSandboxById(victim.sandboxId)).toMatchObject({
      state: 'creating',
      failure: null,
    });
  });

  it("a create under a new operation id for a running sandbox neither adopts nor deletes the tenant's pod", async () => {
    const { handle: legit, input } = await startCreate(api.stack, { diskMib: 2048 });
    const created = await legit.result();
    const since = Date.now();
    const operationId = newOperationId();
    const forged = await startForgedCreate({ ...input, operationId });
    expect((await notAdmitted(forged)).message).toContain(
      `its create is not operation ${operationId}`,
    );
    expect(podWrites(since)).toEqual([]);
    expect(await api.stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'running',
      pod: { uid: created.pod.uid, ip: created.pod.ip },
    });
  });

  it("a create of a stored sandbox started under another workflow id than its operation's makes no pod and fails NotAdmitted", async () => {
    const victim = await storedSandbox();
    const since = Date.now();
    const handle = await api.stack.temporal.client.workflow.start<typeof createSandbox>(
      'createSandbox',
      {
        workflowId: `forged-${victim.operationId}`,
        taskQueue: api.stack.taskQueue,
        args: [victim],
        typedSearchAttributes: operationSearchAttributes(victim, 'create'),
      },
    );
    expect((await notAdmitted(handle)).message).toContain(
      `it runs under workflow id forged-${victim.operationId}, not its operation's id ${victim.operationId}`,
    );
    expect(podWrites(since)).toEqual([]);
    expect(await api.stack.store.getSandboxById(victim.sandboxId)).toMatchObject({
      state: 'creating',
      pod: { uid: null },
    });
  });

  it('a create of a stored sandbox with another deadline than its operation was given makes no pod and fails NotAdmitted', async () => {
    const victim = await storedSandbox();
    const since = Date.now();
    const handle = await startForgedCreate({ ...victim, deadlineMs: 365 * 86_400_000 });
    expect((await notAdmitted(handle)).message).toContain(
      `it was accepted with a deadline of ${victim.deadlineMs} ms, not 31536000000 ms`,
    );
    expect(podWrites(since)).toEqual([]);
  });

  it("a create of a stored sandbox with a re-placement policy its template's catalog entry does not give makes no pod and fails NotAdmitted", async () => {
    const victim = await storedSandbox();
    const since = Date.now();
    const handle = await startForgedCreate({
      ...victim,
      placement: { replaceOn: ['Unavailable'], maxPlacements: 10 },
    });
    expect((await notAdmitted(handle)).message).toContain(
      "its re-placement policy is not the one this worker's catalog gives template base",
    );
    expect(podWrites(since)).toEqual([]);
  });

  it("the pod runs the worker's catalog image, not the one the workflow input names", async () => {
    const input = await storedSandbox();
    const handle = await api.stack.temporal.client.workflow.start<typeof createSandbox>(
      'createSandbox',
      {
        workflowId: input.operationId,
        taskQueue: api.stack.taskQueue,
        args: [{ ...input, image: 'evil.example/miner:latest' }],
        typedSearchAttributes: operationSearchAttributes(input, 'create'),
      },
    );
    const { pod } = await handle.result();
    const read = await api.stack.kubernetes.core.readNamespacedPod({
      name: pod.name,
      namespace: 'sandboxes',
    });
    expect(read.spec?.containers.map((c) => c.image)).toEqual([api.config.templates.base?.image]);
    expect(api.stack.warnings.map((w) => w.msg)).toContain(
      "the workflow names another image than the worker's catalog; the catalog's runs",
    );
  });

  it("a delete started on Temporal for another tenant's creating sandbox cancels nothing and deletes no pod", async () => {
    api.stack.cluster.faults.neverReady(true);
    try {
      const { handle: victim, input } = await startCreate(api.stack, {
        diskMib: 2048,
        deadlineMs: 120_000,
      });
      await expect
        .poll(async () => (await api.stack.store.getSandboxById(input.sandboxId))?.pod.uid, {
          timeout: 30_000,
        })
        .toBeTruthy();
      const since = Date.now();
      const forged: DeleteSandboxInput = {
        operationId: newOperationId(),
        sandboxId: input.sandboxId,
        tenantId: input.tenantId,
        generation: 1,
        attempt: 1,
        createOperationId: input.operationId,
        cancelCreate: true,
      };
      const handle = await api.stack.temporal.client.workflow.start<typeof deleteSandbox>(
        'deleteSandbox',
        { workflowId: forged.operationId, taskQueue: api.stack.taskQueue, args: [forged] },
      );
      expect((await notAdmitted(handle)).message).toMatch(
        new RegExp(`^refused to delete sandbox ${input.sandboxId}: the store holds no operation `),
      );
      expect(podWrites(since)).toEqual([]);
      expect((await victim.describe()).status.name).toBe('RUNNING');
      expect(await api.stack.store.getSandboxById(input.sandboxId)).toMatchObject({
        state: 'creating',
      });
      await victim.cancel();
      await victim.result().catch(() => undefined);
    } finally {
      api.stack.cluster.faults.neverReady(false);
    }
  });
});

describe("the API's fallback to Temporal", () => {
  it('never shows a tenant a workflow its store holds nothing of, whatever its memo says', async () => {
    const forged = createInput({
      operationId: newOperationId(),
      sandboxId: newSandboxId(),
      tenantId: api.tenantA.id,
    });
    const handle = await startForgedCreate(forged);
    await notAdmitted(handle);
    const read = await request(api.app)
      .get(`/v1/operations/${forged.operationId}`)
      .set(bearer(api.tenantA));
    expect(read.status, read.text).toBe(404);
    const cancel = await request(api.app)
      .post(`/v1/operations/${forged.operationId}/cancel`)
      .set(bearer(api.tenantA));
    expect(cancel.status).toBe(404);
  });

  it("never shows a workflow whose memo names the tenant's own sandbox under another operation", async () => {
    const own = await finishedCreate(api.app, api.tenantA, createBody(2048));
    const forged = createInput({
      operationId: newOperationId(),
      sandboxId: own.sandbox_id,
      tenantId: api.tenantA.id,
    });
    await notAdmitted(await startForgedCreate(forged));
    const read = await request(api.app)
      .get(`/v1/operations/${forged.operationId}`)
      .set(bearer(api.tenantA));
    expect(read.status, read.text).toBe(404);
  });
});
