/**
 * One full create end to end on every store backend: SQLite always, PostgreSQL too when
 * `TEST_DATABASE_URL` is set (.ci/run sets it). Real dev server, a worker with the real
 * activities, the simulated cluster over HTTP; the stack's store is a fresh SQLite file or a
 * fresh PostgreSQL schema, migrated when the stack opens it.
 */
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { afterEach, describe, expect, it } from 'vitest';
import { openDatabase } from '../src/store/database.js';
import { FailureCodeKey } from '../src/temporal/search-attribute-keys.js';
import { settle, startCreate } from './support/creates.js';
import { startTestStack, type TestStack } from './support/stack.js';
import { storeBackends } from './support/store.js';

let stack: TestStack | undefined;
afterEach(async () => {
  await stack?.stop();
  stack = undefined;
});

function podDeletes(): number {
  return (stack as TestStack).cluster.requestsWhere({ verb: 'delete', resource: 'pods' }).length;
}

/** The sandbox's execution rows, read straight from the database. */
async function executionsOf(sandboxId: string) {
  const { db } = openDatabase((stack as TestStack).storeOptions);
  try {
    return await db
      .selectFrom('executions')
      .select(['generation', 'activation_attempt', 'state', 'retired_reason'])
      .where('sandbox_id', '=', sandboxId)
      .execute();
  } finally {
    await db.destroy();
  }
}

describe.each(storeBackends())('createSandbox end to end on $name', (backend) => {
  const databaseUrl = backend.name === 'postgres' ? process.env.TEST_DATABASE_URL : undefined;

  it('fails as InvalidRequest when the node refuses the disk, deletes the pod once and retires once', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 }, databaseUrl });
    const { handle, input } = await startCreate(stack, { diskMib: 300 });
    const { error } = await settle(handle.result());

    expect(error).toBeInstanceOf(WorkflowFailedError);
    const failure = (error as WorkflowFailedError).cause;
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).type).toBe('InvalidRequest');
    expect((failure as ApplicationFailure).message).toContain('cloned rootfs size 451 MiB');
    expect(podDeletes()).toBe(1);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'failed',
      failure: { code: 'invalid_request', message: expect.stringContaining('451 MiB') },
    });
    expect(await executionsOf(input.sandboxId)).toEqual([
      { generation: 1, activation_attempt: 1, state: 'retired', retired_reason: 'invalid_request' },
    ]);
    expect((await handle.describe()).typedSearchAttributes.get(FailureCodeKey)).toBe(
      'invalid_request',
    );
  });

  it('creates a running sandbox with the pod IP when the disk is large enough', async () => {
    stack = await startTestStack({ cluster: { startupDelayMs: 100 }, databaseUrl });
    const { handle, input } = await startCreate(stack, { diskMib: 2048 });
    const result = await handle.result();

    expect(result.pod.ip).toMatch(/^10\./);
    expect(await stack.store.getSandboxById(input.sandboxId)).toMatchObject({
      state: 'running',
      pod: { name: result.pod.name, uid: result.pod.uid, ip: result.pod.ip },
      failure: null,
    });
    expect(await executionsOf(input.sandboxId)).toEqual([
      { generation: 1, activation_attempt: 1, state: 'active', retired_reason: null },
    ]);
    expect(podDeletes()).toBe(0);
  });
});
