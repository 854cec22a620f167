/**
 * "The outcome at the decision" (docs/architecture.md): the worker that decides a refused
 * create's readiness wait records the operation's outcome before it fails the wait, so the
 * operation shows `failed` without waiting for a workflow task, and the workflow writes no
 * outcome of its own. Read from what the store and the Temporal server recorded: the row turned
 * `failed` no later than the server recorded the wait's failure, the failure tells the workflow
 * so, and the history holds no local activity writing the outcome. Real dev server, the real
 * worker and API, the simulated cluster over HTTP.
 */
import { temporal } from '@temporalio/proto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acceptedCreate,
  awaitOperation,
  createBody,
  startApiStack,
  type ApiStack,
} from './support/api.js';
import { eventTimeMs } from './support/history-event-time.js';
import { waitUntil } from '../tools/wait-until.js';
import type { OperationRecord } from '../src/store/index.js';

const EventType = temporal.api.enums.v1.EventType;

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({
    // The node refuses disk 300 in each test: no floor may refuse it before the 202.
    stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false },
  });
});
afterAll(async () => {
  await api?.stop();
});

describe('the outcome at the decision', () => {
  it('a refused create shows failed, with the error the workflow would write, before the workflow has seen the refusal', async () => {
    const { id } = await acceptedCreate(api.app, api.tenantA, createBody(300));

    // The row as it first reads failed (read every 5 ms: compensation, a pod delete and a
    // store write away, changes it to finished later).
    const first = await waitUntil(
      async () => {
        const row = await api.stack.store.getOperation(api.tenantA.id, id);
        return row?.status === 'failed' ? row : undefined;
      },
      { intervalMs: 5, timeoutMs: 60_000, what: `operation ${id} failed` },
    );
    expect(first.phase, 'the outcome is read before compensation ends').toBe('compensating');
    const done = await awaitOperation(api.app, api.tenantA, id);

    const handle = api.stack.temporal.client.workflow.getHandle(id);
    await handle.result().catch(() => undefined);
    const events = (await handle.fetchHistory()).events ?? [];
    const waitFailed = events.find(
      (e) => e.eventType === EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    );
    const failure = waitFailed?.activityTaskFailedEventAttributes?.failure;
    const details = JSON.parse(
      Buffer.from(failure?.applicationFailureInfo?.details?.payloads?.[0]?.data ?? '{}').toString(),
    ) as Record<string, unknown>;
    // The decider wrote the row, then failed the wait saying so.
    expect(failure?.applicationFailureInfo?.type).toBe('InvalidRequest');
    expect(details.outcomeRecorded).toBe(true);
    expect(Date.parse(first.updatedAt), 'row failed (ms) <= wait failed (ms)').toBeLessThanOrEqual(
      eventTimeMs(waitFailed),
    );
    // The workflow wrote no outcome: its local activities are the admission and the retirement.
    const localActivities = events.filter(
      (e) => e.markerRecordedEventAttributes?.markerName === 'core_local_activity',
    );
    expect(localActivities).toHaveLength(2);

    // What the caller reads: the error as the workflow builds it, without the decider's flag;
    // the workflow's own failure agrees.
    expect(done).toMatchObject({ status: 'failed', done: true, phase: 'finished' });
    expect(done.error?.code).toBe('invalid_request');
    expect(done.error?.message).toMatch(/cloned rootfs size 451 MiB/);
    expect(done.error?.details).toMatchObject({ rootfs_mib: 451, pod_uid: expect.any(String) });
    expect(done.error?.details).not.toHaveProperty('outcome_recorded');
    expect(errorOf(first)).toEqual(
      errorOf((await api.stack.store.getOperation(api.tenantA.id, id))!),
    );
    const closed = await handle.result().then(
      () => undefined,
      (err: Error & { cause?: Error & { type?: string; message: string } }) => err.cause,
    );
    expect(closed?.type).toBe('InvalidRequest');
    expect(closed?.message).toBe(done.error?.message);
  });
});

/** The error of a stored operation. */
function errorOf(row: OperationRecord) {
  return row.error;
}
