/**
 * The store's part of operations as AIP-151 describes them (migration 0022, src/store/operations.ts)
 * on SQLite and PostgreSQL: `end_time` written when the phase becomes `finished`, the first
 * cancel asked kept, and a create's path written with its pod.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openStore, type Store } from '../src/store/index.js';
import { storeBackends, type StoreTarget } from './support/store.js';

function steppingClock(): () => Date {
  let ms = Date.parse('2025-01-01T00:00:00.000Z');
  return () => new Date((ms += 1000));
}

describe.each(storeBackends())('operation times on $name', (backend) => {
  let target: StoreTarget;
  let store: Store;
  beforeEach(async () => {
    target = await backend.freshTarget();
    store = await openStore({ ...target.options, clock: steppingClock() });
  });
  afterEach(async () => {
    await store?.close();
    await target?.dispose();
  });

  const operation = () => store.getOperation('acme', 'op_0001');

  it('writes end_time when the phase becomes finished, keeps the first cancel asked, and the path', async () => {
    const created = await store.createSandbox({
      id: 'sbx_0001',
      tenant: 'acme',
      template: 'base',
      resources: { cpu: 1, memoryMib: 1024, diskMib: 2048 },
      operationId: 'op_0001',
    });
    expect(created.kind).toBe('created');
    expect(await operation()).toMatchObject({
      endTime: null,
      cancellationRequested: false,
      createPath: null,
    });
    const execution = { sandboxId: 'sbx_0001', generation: 1, attempt: 1, operationId: 'op_0001' };
    await store.recordPod({ ...execution, podName: 'sbx-1', podUid: 'uid-1', createPath: 'cold' });
    expect(await operation()).toMatchObject({ createPath: 'cold', endTime: null });

    expect(await store.markCancellationRequested('op_0001')).toBe(true);
    expect(await store.markCancellationRequested('op_0001')).toBe(false);
    expect((await operation())?.cancellationRequested).toBe(true);

    expect(
      await store.advanceOperation('op_0001', { phase: 'finished', status: 'cancelled' }),
    ).toBe(true);
    const done = await operation();
    expect(done?.done).toBe(true);
    expect(done?.endTime).not.toBeNull();
    expect(Date.parse(done!.endTime!)).toBeGreaterThan(Date.parse(done!.createdAt));
  });
});
