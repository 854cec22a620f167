/**
 * The sandboxLifetime workflow's branches (src/workflows/sandbox-lifetime.ts) on Temporal's
 * time-skipping test server with a stub `expireSandbox`: a lifetime of days passes in no wall
 * time. Fast tier (docs/testing.md). test/lifetimes.test.ts runs the real activities.
 */
import { WorkflowFailedError, type WorkflowHandle } from '@temporalio/client';
import { CancelledFailure } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  EXPIRE_TIME_SIGNAL,
  type ExpiryOutcome,
  type SandboxLifetimeInput,
} from '../contract/index.js';
import { startTimeSkippingEnvironment } from '../environments/time-skipping-server/environment.js';
import { bundleSandboxWorkflows } from '../src/worker/workflow-bundle.js';
import type { sandboxLifetime } from '../src/workflows/sandbox-lifetime.js';

const taskQueue = 'lifetime-branches';
const DAY_MS = 24 * 3_600_000;

/** Per sandbox: what `expireSandbox` answers, and the (server) times it was called at. */
const answers = new Map<string, (nowMs: number) => ExpiryOutcome>();
const calls = new Map<string, number[]>();

let env: TestWorkflowEnvironment;
let worker: Worker;
let running: Promise<void>;

beforeAll(async () => {
  env = await startTimeSkippingEnvironment();
  worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await bundleSandboxWorkflows(),
    activities: {
      async expireSandbox(input: { sandboxId: string }): Promise<ExpiryOutcome> {
        const nowMs = (await env.currentTimeMs()) as number;
        calls.set(input.sandboxId, [...(calls.get(input.sandboxId) ?? []), nowMs]);
        return answers.get(input.sandboxId)!(nowMs);
      },
    },
  });
  running = worker.run();
}, 120_000);
afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
});

async function start(
  sandboxId: string,
  expireInMs: number,
  answer: (nowMs: number) => ExpiryOutcome,
): Promise<{ handle: WorkflowHandle<typeof sandboxLifetime>; expireAtMs: number }> {
  answers.set(sandboxId, answer);
  const expireAtMs = Number(await env.currentTimeMs()) + expireInMs;
  const input: SandboxLifetimeInput = {
    sandboxId,
    tenantId: 't',
    expireTime: new Date(expireAtMs).toISOString(),
  };
  const handle = await env.client.workflow.start<typeof sandboxLifetime>('sandboxLifetime', {
    taskQueue,
    workflowId: `lifetime-${sandboxId}`,
    args: [input],
  });
  return { handle, expireAtMs };
}

const deleting: ExpiryOutcome = { kind: 'deleting', operationId: 'op_x' };

describe('sandboxLifetime', () => {
  it('waits a two-day lifetime on one timer, then runs the expiry once, at expire_time', async () => {
    const { handle, expireAtMs } = await start('sbx_days', 2 * DAY_MS, () => deleting);
    expect(await handle.result()).toEqual(deleting);
    const [at, ...more] = calls.get('sbx_days') ?? [];
    expect(more).toEqual([]);
    expect(at).toBeGreaterThanOrEqual(expireAtMs);
    // The test server's clock may run on past the timer while a loaded runner gets the
    // activity going; "at expire_time" is the one timer's length, read from the history.
    expect(at! - expireAtMs).toBeLessThan(10_000);
    const history = await handle.fetchHistory();
    const timers = history.events?.filter((event) => event.timerStartedEventAttributes) ?? [];
    expect(timers).toHaveLength(1);
    const timeout = timers[0]!.timerStartedEventAttributes!.startToFireTimeout!;
    const timerMs = Number(timeout.seconds ?? 0) * 1_000 + Math.round((timeout.nanos ?? 0) / 1e6);
    expect(timerMs).toBeLessThanOrEqual(2 * DAY_MS);
    expect(timerMs).toBeGreaterThan(2 * DAY_MS - 10_000);
    // The expiry ran as a local activity in the workflow task the timer woke: no activity task,
    // no workflow task of its own (two in all: the start's and the timer's).
    const events = history.events ?? [];
    expect(events.filter((event) => event.activityTaskScheduledEventAttributes)).toEqual([]);
    expect(
      events.filter(
        (event) => event.markerRecordedEventAttributes?.markerName === 'core_local_activity',
      ),
    ).toHaveLength(1);
    expect(events.filter((event) => event.workflowTaskCompletedEventAttributes)).toHaveLength(2);
  });

  it('re-arms its timer when an extend signals a later time', async () => {
    const { handle, expireAtMs } = await start('sbx_extended', DAY_MS, () => deleting);
    const laterMs = expireAtMs + DAY_MS;
    await handle.signal(EXPIRE_TIME_SIGNAL, new Date(laterMs).toISOString());
    expect(await handle.result()).toEqual(deleting);
    const [at, ...more] = calls.get('sbx_extended') ?? [];
    expect(more).toEqual([]);
    expect(at).toBeGreaterThanOrEqual(laterMs);
  });

  it('waits again for the later time the store holds when an extend signal was lost', async () => {
    let laterMs = 0;
    const { handle, expireAtMs } = await start('sbx_lost_signal', 60_000, (nowMs) =>
      nowMs < laterMs
        ? { kind: 'extended', expireTime: new Date(laterMs).toISOString() }
        : deleting,
    );
    laterMs = expireAtMs + 3_600_000;
    expect(await handle.result()).toEqual(deleting);
    const times = calls.get('sbx_lost_signal') ?? [];
    expect(times).toHaveLength(2);
    expect(times[1]).toBeGreaterThanOrEqual(laterMs);
  });

  it('never spins when the store still holds the time it fired for (clocks apart): one look a second', async () => {
    let same = 3;
    const { handle, expireAtMs } = await start('sbx_skew', 60_000, () =>
      same-- > 0 ? { kind: 'extended', expireTime: new Date(expireAtMs).toISOString() } : deleting,
    );
    expect(await handle.result()).toEqual(deleting);
    const times = calls.get('sbx_skew') ?? [];
    expect(times).toHaveLength(4);
    for (let i = 1; i < times.length; i++) {
      expect(times[i]! - times[i - 1]!).toBeGreaterThanOrEqual(1_000);
    }
  });

  it('ends without a delete when the sandbox no longer runs', async () => {
    const { handle } = await start('sbx_gone', 60_000, () => ({ kind: 'ended', state: 'lost' }));
    expect(await handle.result()).toEqual({ kind: 'ended', state: 'lost' });
  });

  it('ends cancelled, with no expiry, when the sandbox is deleted first', async () => {
    const { handle } = await start('sbx_deleted', DAY_MS, () => deleting);
    await handle.cancel();
    const error = await handle.result().catch((err: unknown) => err);
    expect(error).toBeInstanceOf(WorkflowFailedError);
    expect((error as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    expect(calls.get('sbx_deleted')).toBeUndefined();
  });
});
