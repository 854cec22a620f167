/**
 * The createSandbox workflow's branches, one test each, with stub activities: the real
 * workflow code (the production bundle) on Temporal's time-skipping test server
 * (`@temporalio/testing`), but activities that do what a test tells them (no cluster, no store),
 * so every branch runs in about a second and a deadline of 30 minutes passes in no wall time
 * while the test awaits the result. Part of the fast tier (docs/testing.md). The full-stack
 * tests (create-workflow.test.ts) drive the same branches through the real activities.
 */
import { WorkflowFailedError, type Client, type WorkflowHandle } from '@temporalio/client';
import { ApplicationFailure, CancelledFailure, CompleteAsyncError } from '@temporalio/common';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { CreateActivities } from '../src/activities/index.js';
import type { CreateFailureDetails, CreateSandboxInput } from '../contract/index.js';
import { startTimeSkippingEnvironment } from '../environments/time-skipping-server/environment.js';
import type { PodRef } from '../src/kubernetes/pods.js';
import { bundleSandboxWorkflows } from '../src/worker/workflow-bundle.js';
import type { createSandbox } from '../src/workflows/create-sandbox.js';
import { createInput } from './support/creates.js';
import { waitUntil } from '../tools/wait-until.js';

type Activities = Pick<
  CreateActivities,
  | 'admitCreate'
  | 'createPod'
  | 'awaitPodReady'
  | 'markSandboxRunning'
  | 'deletePod'
  | 'retireExecution'
  | 'recordOperationOutcome'
  | 'claimWarmPod'
>;
type ActivityName = keyof Activities;

/** One create's stubs and what its activities were called with, in order. */
interface Script {
  stubs: Partial<{ [Name in ActivityName]: (...args: Parameters<Activities[Name]>) => unknown }>;
  calls: Array<{ name: ActivityName; input: Record<string, unknown> }>;
}

const POD: PodRef = { name: 'sbx-branch-g1', uid: 'uid-1', resourceVersion: '7' };
const scripts = new Map<string, Script>();

/** Stub activities: each looks up the script of its create (by operation id) and records the call. */
function stubActivities(): Activities {
  const dispatch =
    <Name extends ActivityName>(name: Name, fallback: (...args: never[]) => unknown) =>
    async (input: { operationId: string }): Promise<never> => {
      const script = scripts.get(input.operationId);
      if (!script) throw new Error(`no script for ${input.operationId}`);
      // The admission is not a step of the create: its own test below checks it.
      if (name !== 'admitCreate') {
        script.calls.push({ name, input: input as unknown as Record<string, unknown> });
      }
      const stub = (script.stubs[name] ?? fallback) as (arg: unknown) => unknown;
      return (await stub(input)) as never;
    };
  return {
    admitCreate: dispatch('admitCreate', () => undefined),
    createPod: dispatch('createPod', () => POD),
    awaitPodReady: dispatch('awaitPodReady', () => ({ podIp: '10.0.0.9' })),
    markSandboxRunning: dispatch('markSandboxRunning', () => true),
    deletePod: dispatch('deletePod', () => 'deleted'),
    retireExecution: dispatch('retireExecution', () => true),
    recordOperationOutcome: dispatch('recordOperationOutcome', () => true),
    claimWarmPod: dispatch('claimWarmPod', () => null),
  } as unknown as Activities;
}

/**
 * An `awaitPodReady` stub that waits as the real one does (src/verdict/readiness-wait.ts): it goes
 * asynchronous at once and nothing ever completes it, heartbeats or acknowledges a cancel.
 * A stub that acknowledged the cancel (ActivityTaskCanceled) could land that event in the
 * workflow's last task and fail it as UnhandledCommand, re-running the local retireExecution.
 */
async function waitAsynchronously(): Promise<never> {
  throw new CompleteAsyncError();
}

/**
 * An `awaitPodReady` stub whose every attempt fails as retryable (as a wait attempt whose worker
 * died is failed: src/verdict/readiness-decider.ts, `WaitNotRecorded`), so Temporal retries it
 * 1 s to 10 s apart until the deadline cancels it. Between attempts no activity runs, so the
 * time-skipping server jumps to the next retry: the test server does not skip time while an
 * activity is running, which rules out {@link waitAsynchronously} for a deadline far away.
 */
async function notReadyYet(): Promise<never> {
  throw ApplicationFailure.retryable('the pod has no IP yet', 'WaitNotRecorded');
}

/**
 * Whether the workflow asked to cancel its wait and closed without waiting for the wait to
 * answer (TRY_CANCEL): the history holds the cancel request and no close event of the wait.
 */
async function cancelledWithoutWaiting(handle: WorkflowHandle): Promise<boolean> {
  const events = (await handle.fetchHistory()).events ?? [];
  const scheduled = events.find(
    (event) => event.activityTaskScheduledEventAttributes?.activityType?.name === 'awaitPodReady',
  );
  const ofWait = (attributes?: { scheduledEventId?: { toString(): string } | null } | null) =>
    attributes?.scheduledEventId?.toString() === scheduled?.eventId?.toString();
  const requested = events.some((e) => ofWait(e.activityTaskCancelRequestedEventAttributes));
  const answered = events.some(
    (e) =>
      ofWait(e.activityTaskCanceledEventAttributes) ||
      ofWait(e.activityTaskTimedOutEventAttributes) ||
      ofWait(e.activityTaskCompletedEventAttributes) ||
      ofWait(e.activityTaskFailedEventAttributes),
  );
  return scheduled !== undefined && requested && !answered;
}

/**
 * Whether the workflow has handled its cancel request: a workflow task completed after the
 * request, so what the workflow does about the cancel is in the history (commands and all).
 */
async function cancelHandled(handle: WorkflowHandle): Promise<boolean> {
  const events = (await handle.fetchHistory()).events ?? [];
  const requested = events.findIndex((e) => e.workflowExecutionCancelRequestedEventAttributes);
  return (
    requested >= 0 && events.slice(requested).some((e) => e.workflowTaskCompletedEventAttributes)
  );
}

/** The activity types the workflow scheduled so far, as the history holds them. */
async function scheduledActivities(handle: WorkflowHandle): Promise<string[]> {
  const events = (await handle.fetchHistory()).events ?? [];
  return events.flatMap((e) => e.activityTaskScheduledEventAttributes?.activityType?.name ?? []);
}

/** A promise a test resolves by hand. */
function gate<T>(): { promise: Promise<T>; open(value: T): void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

/** A time-skipping test server and a worker of the production bundle with the stub activities. */
interface Branches {
  env: TestWorkflowEnvironment;
  client: Client;
  stop(): Promise<void>;
}

const taskQueue = 'create-branches';
let bundle: Promise<{ code: string }> | undefined;

async function startBranches(): Promise<Branches> {
  bundle ??= bundleSandboxWorkflows();
  const env = await startTimeSkippingEnvironment();
  const worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await bundle,
    activities: stubActivities(),
    // Cancellation reaches an activity with a heartbeat's answer: do not throttle them here.
    maxHeartbeatThrottleInterval: '50 milliseconds',
    defaultHeartbeatThrottleInterval: '50 milliseconds',
  });
  const running = worker.run();
  return {
    env,
    client: env.client,
    async stop() {
      worker.shutdown();
      await running.catch(() => undefined);
      await env.teardown();
    },
  };
}

let branches: Branches;
beforeAll(async () => {
  branches = await startBranches();
});
afterAll(async () => {
  await branches?.stop();
});

/** Starts a create whose activities follow `stubs`. */
async function start(
  stubs: Script['stubs'],
  overrides: Partial<CreateSandboxInput> = {},
  on: Branches = branches,
): Promise<{ handle: WorkflowHandle<typeof createSandbox>; script: Script }> {
  const input = createInput(overrides);
  const script: Script = { stubs, calls: [] };
  scripts.set(input.operationId, script);
  const handle = await on.client.workflow.start<typeof createSandbox>('createSandbox', {
    workflowId: input.operationId,
    taskQueue,
    // The test server registers no custom search attribute: the workflow upserts none.
    args: [{ searchAttributes: [], ...input }],
  });
  return { handle, script };
}

async function failureOf(handle: WorkflowHandle): Promise<Error> {
  const error: unknown = await handle.result().then(
    () => new Error('the workflow succeeded'),
    (err: unknown) => err,
  );
  expect(error).toBeInstanceOf(WorkflowFailedError);
  return (error as WorkflowFailedError).cause as Error;
}

/** The steps called, in order, without the outcome write (its own tests check where it goes). */
function names(script: Script): ActivityName[] {
  // No repeat is tolerated: a local activity runs again only when its workflow task failed, and
  // none of these branches may fail one.
  return script.calls.map((call) => call.name).filter((name) => name !== 'recordOperationOutcome');
}

/** The input of the first call of `name`. */
function callOf(script: Script, name: ActivityName): Record<string, unknown> | undefined {
  return script.calls.find((call) => call.name === name)?.input;
}

/** Every activity called, in order, the outcome write included. */
function allNames(script: Script): ActivityName[] {
  return script.calls.map((call) => call.name);
}

function retired(script: Script): Record<string, unknown> | undefined {
  return script.calls.find((call) => call.name === 'retireExecution')?.input;
}

const invalidRequest = (): never => {
  const details: CreateFailureDetails = {
    code: 'invalid_request',
    reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
    podName: POD.name,
    podUid: POD.uid,
  };
  throw ApplicationFailure.nonRetryable(
    `the node refused the sandbox: ${details.reason}`,
    'InvalidRequest',
    details,
  );
};

describe('createSandbox branches (stub activities)', () => {
  it('succeeds with the pod IP and compensates nothing', async () => {
    const { handle, script } = await start({});
    expect(await handle.result()).toMatchObject({ pod: { uid: POD.uid, ip: '10.0.0.9' } });
    expect(names(script)).toEqual(['createPod', 'awaitPodReady', 'markSandboxRunning']);
    expect(script.calls[2]?.input).toMatchObject({ podIp: '10.0.0.9', podUid: POD.uid });
  });

  it('a create the worker does not admit fails NotAdmitted with no step, no outcome write and no compensation', async () => {
    const { handle, script } = await start({
      admitCreate: () => {
        throw ApplicationFailure.nonRetryable(
          'refused to create sandbox sbx_x: the store holds no such sandbox',
          'NotAdmitted',
        );
      },
    });
    const failure = await failureOf(handle);
    expect((failure as ApplicationFailure).type).toBe('NotAdmitted');
    expect(failure.message).toBe(
      'refused to create sandbox sbx_x: the store holds no such sandbox',
    );
    expect(allNames(script)).toEqual([]);
  });

  it('fails as InvalidRequest on a refusal, after deleting the pod and retiring the execution', async () => {
    const { handle, script } = await start({ awaitPodReady: invalidRequest });
    const failure = await failureOf(handle);
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect((failure as ApplicationFailure).type).toBe('InvalidRequest');
    expect(failure.message).toMatch(/451 MiB/);
    expect((failure as ApplicationFailure).details?.[0]).toMatchObject({
      code: 'invalid_request',
      podUid: POD.uid,
    });
    expect(names(script)).toEqual(['createPod', 'awaitPodReady', 'deletePod', 'retireExecution']);
    expect(callOf(script, 'deletePod')).toMatchObject({ pod: { uid: POD.uid } });
    expect(retired(script)).toMatchObject({
      reason: 'invalid_request',
      failure: { code: 'invalid_request' },
    });
  });

  it('publishes the outcome (failed, the error) before compensation starts', async () => {
    const { handle, script } = await start({ awaitPodReady: invalidRequest });
    await failureOf(handle);
    expect(allNames(script)).toEqual([
      'createPod',
      'awaitPodReady',
      'recordOperationOutcome',
      'deletePod',
      'retireExecution',
    ]);
    expect(script.calls[2]?.input).toMatchObject({
      status: 'failed',
      podUid: POD.uid,
      error: { code: 'invalid_request', message: expect.stringMatching(/451 MiB/) },
    });
    expect((script.calls[2]?.input.error as { details: object }).details).not.toHaveProperty(
      'code',
    );
  });

  it('publishes a cancel as cancelled before compensation starts', async () => {
    const { handle, script } = await start({ awaitPodReady: waitAsynchronously });
    await waitUntil(() => names(script).includes('awaitPodReady'));
    await handle.cancel();
    await failureOf(handle);
    const outcome = script.calls.find((call) => call.name === 'recordOperationOutcome');
    expect(outcome?.input).toMatchObject({ status: 'cancelled', error: { code: 'cancelled' } });
    expect(allNames(script).indexOf('recordOperationOutcome')).toBeLessThan(
      allNames(script).indexOf('deletePod'),
    );
  });

  it('asks its wait for the outcome at the decision, and writes no outcome of its own when the wait says it was recorded', async () => {
    const recordedAtDecision = (): never => {
      const details: CreateFailureDetails = {
        code: 'invalid_request',
        reason: 'rootfs_size_mb=300 is smaller than cloned rootfs size 451 MiB',
        podName: POD.name,
        podUid: POD.uid,
        rootfsMib: 451,
        eventName: 'sbx-branch-g1.refusal',
        outcomeRecorded: true,
      };
      throw ApplicationFailure.nonRetryable(
        `the node refused the sandbox: ${details.reason}`,
        'InvalidRequest',
        details,
      );
    };
    const { handle, script } = await start({ awaitPodReady: recordedAtDecision });
    const failure = await failureOf(handle);
    expect((failure as ApplicationFailure).type).toBe('InvalidRequest');
    expect(callOf(script, 'awaitPodReady')).toMatchObject({ recordOutcome: true });
    expect(allNames(script)).toEqual([
      'createPod',
      'awaitPodReady',
      'deletePod',
      'retireExecution',
    ]);
    expect(retired(script)).toMatchObject({
      reason: 'invalid_request',
      failure: { code: 'invalid_request', message: expect.stringMatching(/451 MiB/) },
      rootfsFloor: { rootfsMib: 451 },
    });
    // The flag is the decider's word to the workflow, never part of what anyone is shown.
    expect((failure as ApplicationFailure).details?.[0]).not.toHaveProperty('outcomeRecorded');
  });

  it('ends with the outcome recorded first when a cancel raced a decision that recorded it', async () => {
    const recorded = {
      status: 'failed',
      error: {
        code: 'invalid_request',
        message: 'the node refused the sandbox: smaller than cloned rootfs size 451 MiB',
        details: { podName: POD.name, podUid: POD.uid, rootfsMib: 451, eventName: 'ev-1' },
      },
    };
    const { handle, script } = await start({
      awaitPodReady: waitAsynchronously,
      recordOperationOutcome: () => ({ wrote: false, recorded }),
    });
    await waitUntil(() => names(script).includes('awaitPodReady'));
    await handle.cancel();
    const failure = await failureOf(handle);
    // The cancel's write found the decider's outcome first: the create ends as the row says.
    expect(callOf(script, 'recordOperationOutcome')).toMatchObject({
      status: 'cancelled',
      tenantId: expect.any(String),
    });
    expect((failure as ApplicationFailure).type).toBe('InvalidRequest');
    expect(failure.message).toBe(recorded.error.message);
    expect(retired(script)).toMatchObject({
      reason: 'invalid_request',
      failure: { code: 'invalid_request', message: recorded.error.message },
    });
  });

  it('compensates all the same when the outcome cannot be recorded', async () => {
    const { handle, script } = await start({
      awaitPodReady: invalidRequest,
      recordOperationOutcome: () => {
        throw new Error('the store is down');
      },
    });
    const failure = await failureOf(handle);
    expect((failure as ApplicationFailure).type).toBe('InvalidRequest');
    const tries = allNames(script).filter((name) => name === 'recordOperationOutcome').length;
    expect(tries).toBe(3);
    expect(names(script)).toEqual(['createPod', 'awaitPodReady', 'deletePod', 'retireExecution']);
  });

  it('fails as PodNeverReady when the deadline passes during the wait, cancelling the wait', async () => {
    const { handle, script } = await start(
      { awaitPodReady: waitAsynchronously },
      { deadlineMs: 300 },
    );
    const failure = await failureOf(handle);
    expect((failure as ApplicationFailure).type).toBe('PodNeverReady');
    expect(failure.message).toMatch(/pod sbx-branch-g1 had no IP within the create deadline/);
    // TRY_CANCEL: the workflow did not wait for the wait to answer the cancel.
    expect(await cancelledWithoutWaiting(handle)).toBe(true);
    expect(names(script)).toEqual(['createPod', 'awaitPodReady', 'deletePod', 'retireExecution']);
    expect(retired(script)).toMatchObject({ reason: 'pod_never_ready' });
  });

  it('fails as PodFailed when the pod fails, after compensating', async () => {
    const { handle, script } = await start({
      awaitPodReady: () => {
        throw ApplicationFailure.nonRetryable('pod sbx-branch-g1 failed: Evicted', 'PodFailed', {
          code: 'pod_failed',
        });
      },
    });
    const failure = await failureOf(handle);
    expect((failure as ApplicationFailure).type).toBe('PodFailed');
    expect(failure.message).toBe('pod sbx-branch-g1 failed: Evicted');
    expect(names(script)).toEqual(['createPod', 'awaitPodReady', 'deletePod', 'retireExecution']);
    expect(retired(script)).toMatchObject({ reason: 'pod_failed' });
  });

  it('fails as Internal when the execution was fenced out before it was marked running', async () => {
    const { handle, script } = await start({ markSandboxRunning: () => false });
    const failure = await failureOf(handle);
    expect((failure as ApplicationFailure).type).toBe('Internal');
    expect(failure.message).toMatch(/retired or superseded/);
    expect(names(script)).toEqual([
      'createPod',
      'awaitPodReady',
      'markSandboxRunning',
      'deletePod',
      'retireExecution',
    ]);
    expect(retired(script)).toMatchObject({ reason: 'internal' });
  });

  it('retries a compensation step that fails once, then ends the same way', async () => {
    let deletes = 0;
    const { handle, script } = await start({
      awaitPodReady: invalidRequest,
      deletePod: () => {
        deletes += 1;
        if (deletes === 1) throw new Error('apiserver unavailable');
        return 'deleted';
      },
    });
    const failure = await failureOf(handle);
    expect((failure as ApplicationFailure).type).toBe('InvalidRequest');
    expect(names(script)).toEqual([
      'createPod',
      'awaitPodReady',
      'deletePod',
      'deletePod',
      'retireExecution',
    ]);
  });

  it('when cancelled during createPod, waits for the pod, then deletes it and ends cancelled', async () => {
    const created = gate<PodRef>();
    const { handle, script } = await start({ createPod: () => created.promise });
    await waitUntil(() => names(script).includes('createPod'));
    await handle.cancel();
    // The settled step is not abandoned: compensation waits until the pod is known.
    await waitUntil(() => cancelHandled(handle), { what: 'the cancel handled by the workflow' });
    expect(await scheduledActivities(handle)).not.toContain('deletePod');
    expect(names(script)).toEqual(['createPod']);
    created.open(POD);
    expect(await failureOf(handle)).toBeInstanceOf(CancelledFailure);
    expect(names(script)).toEqual(['createPod', 'deletePod', 'retireExecution']);
    expect(callOf(script, 'deletePod')).toMatchObject({ pod: { uid: POD.uid } });
    expect(retired(script)).toMatchObject({ reason: 'cancelled' });
  });

  it('when cancelled during the wait, cancels the wait, compensates and ends cancelled', async () => {
    const { handle, script } = await start({ awaitPodReady: waitAsynchronously });
    await waitUntil(() => names(script).includes('awaitPodReady'));
    await handle.cancel();
    expect(await failureOf(handle)).toBeInstanceOf(CancelledFailure);
    // TRY_CANCEL: the workflow did not wait for the wait to answer the cancel.
    expect(await cancelledWithoutWaiting(handle)).toBe(true);
    expect(names(script)).toEqual(['createPod', 'awaitPodReady', 'deletePod', 'retireExecution']);
    expect(retired(script)).toMatchObject({ reason: 'cancelled' });
  });

  it('when cancelled during markSandboxRunning, lets the step finish and keeps the running sandbox', async () => {
    const marked = gate<boolean>();
    const { handle, script } = await start({ markSandboxRunning: () => marked.promise });
    await waitUntil(() => names(script).includes('markSandboxRunning'));
    await handle.cancel();
    await waitUntil(() => cancelHandled(handle), { what: 'the cancel handled by the workflow' });
    marked.open(true);
    expect(await handle.result()).toMatchObject({ pod: { ip: '10.0.0.9' } });
    expect(names(script)).toEqual(['createPod', 'awaitPodReady', 'markSandboxRunning']);
  });
});

// The test server skips time only while no activity runs anywhere on it, and the branches above
// leave waits that went asynchronous pending (as real waits do, until their backstop timeout):
// a far deadline gets a server of its own.
describe('createSandbox deadline (stub activities, time skipped)', () => {
  let own: Branches;
  beforeAll(async () => {
    own = await startBranches();
  });
  afterAll(async () => {
    await own?.stop();
  });

  it('fails as pod_never_ready at the 30-minute deadline and compensates, in no wall time', async () => {
    const started = Date.now();
    const { handle, script } = await start(
      { awaitPodReady: notReadyYet },
      { deadlineMs: 30 * 60_000 }, // CREATE_DEADLINE_MS's default
      own,
    );
    const failure = await failureOf(handle);
    const wallMs = Date.now() - started;
    expect((failure as ApplicationFailure).type).toBe('PodNeverReady');
    expect(failure.message).toMatch(/had no IP within the create deadline of 1800 s/);
    expect((failure as ApplicationFailure).details?.[0]).toMatchObject({
      code: 'pod_never_ready',
      podName: POD.name,
      podUid: POD.uid,
    });
    const waits = names(script).filter((name) => name === 'awaitPodReady').length;
    expect(waits, 'wait attempts, 1 s to 10 s apart').toBeGreaterThan(100);
    expect(names(script).filter((name) => name !== 'awaitPodReady')).toEqual([
      'createPod',
      'deletePod',
      'retireExecution',
    ]);
    expect(callOf(script, 'deletePod')).toMatchObject({ pod: { uid: POD.uid } });
    expect(retired(script)).toMatchObject({
      reason: 'pod_never_ready',
      failure: { code: 'pod_never_ready' },
    });
    // The workflow's clock passed the deadline; the test's did not.
    const { startTime, closeTime } = await handle.describe();
    expect((closeTime?.getTime() ?? 0) - startTime.getTime()).toBeGreaterThanOrEqual(30 * 60_000);
    expect(wallMs).toBeLessThan(15_000);
  });
});

describe('a create whose template has a warm pool', () => {
  const WARM = { name: 'warm-base-abc', uid: 'uid-warm', resourceVersion: '9', image: 'img:1' };

  it('runs on the claimed pod in one step: no pod create, no wait, no separate mark', async () => {
    const { handle, script } = await start(
      { claimWarmPod: () => ({ pod: WARM, podIp: '10.0.0.7', marked: true }) },
      { warmPool: true },
    );
    const result = await handle.result();
    expect(result.pod).toEqual({ name: WARM.name, uid: WARM.uid, ip: '10.0.0.7' });
    expect(names(script)).toEqual(['claimWarmPod']);
  });

  it('goes cold when the pool has no pod for it, with nothing to undo', async () => {
    const { handle, script } = await start({}, { warmPool: true });
    await handle.result();
    expect(names(script)).toEqual([
      'claimWarmPod',
      'createPod',
      'awaitPodReady',
      'markSandboxRunning',
    ]);
  });

  it('deletes the pod a claim cut short may have claimed, found by the sandbox id label', async () => {
    const { handle, script } = await start(
      {
        claimWarmPod: () => {
          throw ApplicationFailure.nonRetryable('the store is gone', 'Internal');
        },
      },
      { warmPool: true },
    );
    await failureOf(handle);
    expect(names(script)).toEqual(['claimWarmPod', 'deletePod', 'retireExecution']);
    expect(callOf(script, 'deletePod')).toMatchObject({ claimedFrom: 'base' });
    expect(callOf(script, 'deletePod')?.pod).toBeUndefined();
  });

  it('deletes the claimed pod by uid when the execution was retired meanwhile', async () => {
    const { handle, script } = await start(
      { claimWarmPod: () => ({ pod: WARM, podIp: '10.0.0.7', marked: false }) },
      { warmPool: true },
    );
    await failureOf(handle);
    expect(callOf(script, 'deletePod')).toMatchObject({ pod: { uid: WARM.uid } });
  });
});
