/**
 * The `webhookDelivery` workflow's schedule on Temporal's time-skipping test server, with a stub
 * `deliverWebhook`: a receiver down for more than an hour gets its events within the retry policy's
 * longest interval (5 minutes) of coming back, in the order they were emitted, and an event the
 * worker refuses is given up without holding the next one.
 */
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { DefaultLogger, Runtime, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { WebhookEventRef } from '../contract/index.js';
import { startTimeSkippingEnvironment } from '../environments/time-skipping-server/environment.js';
import { bundleSandboxWorkflows } from '../src/worker/workflow-bundle.js';

/** How long the receiver is down: more than an hour. */
const DOWN_MS = 70 * 60_000;
const taskQueue = 'webhook-delivery-schedule';

/** What the stub receiver does with an attempt, by the server time since its first attempt. */
let behave: (ref: WebhookEventRef, sinceFirstMs: number) => 'ok' | 'down' | 'refused' = () => 'ok';
let firstAttemptAtMs: number | undefined;
const succeeded: Array<{ id: string; sinceFirstMs: number }> = [];
const attempts: number[] = [];

async function deliverWebhook(input: { endpointId: string; event: WebhookEventRef }) {
  const scheduledAtMs = Context.current().info.currentAttemptScheduledTimestampMs;
  firstAttemptAtMs ??= scheduledAtMs;
  const sinceFirstMs = scheduledAtMs - firstAttemptAtMs;
  attempts.push(sinceFirstMs);
  const outcome = behave(input.event, sinceFirstMs);
  if (outcome === 'down') throw ApplicationFailure.retryable('connect ECONNREFUSED');
  if (outcome === 'refused') {
    throw ApplicationFailure.create({
      type: 'WebhookTargetRefused',
      message: 'loopback',
      nonRetryable: true,
    });
  }
  succeeded.push({ id: input.event.id, sinceFirstMs });
  return 'delivered' as const;
}

let env: TestWorkflowEnvironment;
let worker: Worker;
let running: Promise<void>;
beforeAll(async () => {
  // The stub's failed attempts are the point of this suite: do not log each one.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  env = await startTimeSkippingEnvironment();
  worker = await Worker.create({
    connection: env.nativeConnection,
    namespace: env.namespace ?? 'default',
    taskQueue,
    workflowBundle: await bundleSandboxWorkflows(),
    activities: { deliverWebhook },
  });
  running = worker.run();
});
afterAll(async () => {
  worker?.shutdown();
  await running?.catch(() => undefined);
  await env?.teardown();
});

function ref(id: string, type = 'sandbox.running'): WebhookEventRef {
  return { id, type: type as WebhookEventRef['type'], sandboxId: 'sbx_1' };
}

async function deliver(workflowId: string, events: WebhookEventRef[]) {
  let handle;
  for (const event of events) {
    handle = await env.client.workflow.signalWithStart('webhookDelivery', {
      workflowId,
      taskQueue,
      args: [{ endpointId: 'whe_1', sandboxId: 'sbx_1' }],
      signal: 'webhookEvent',
      signalArgs: [event],
    });
  }
  return (await handle!.result()) as { delivered: number };
}

describe('webhookDelivery', () => {
  it('delivers to a receiver down for 70 minutes within 5 minutes of its return, in order', async () => {
    firstAttemptAtMs = undefined;
    succeeded.length = 0;
    attempts.length = 0;
    behave = (_ref, sinceFirstMs) => (sinceFirstMs < DOWN_MS ? 'down' : 'ok');
    const result = await deliver('wd-hour', [
      ref('evt_running'),
      ref('evt_deleted', 'sandbox.deleted'),
    ]);
    expect(result.delivered).toBe(2);
    expect(succeeded.map((s) => s.id)).toEqual(['evt_running', 'evt_deleted']);
    const back = succeeded[0]!.sinceFirstMs;
    expect(back).toBeGreaterThanOrEqual(DOWN_MS);
    expect(back).toBeLessThanOrEqual(DOWN_MS + 5 * 60_000 + 1_000);
    const gaps = attempts.slice(1).map((at, n) => at - attempts[n]!);
    // 5 minutes apart at most, plus the milliseconds an attempt takes.
    expect(Math.max(...gaps)).toBeLessThanOrEqual(5 * 60_000 + 1_000);
  });

  it('gives up a refused event and delivers the next one', async () => {
    firstAttemptAtMs = undefined;
    succeeded.length = 0;
    behave = (event) => (event.id === 'evt_refused' ? 'refused' : 'ok');
    const result = await deliver('wd-refused', [
      ref('evt_refused'),
      ref('evt_next', 'sandbox.deleted'),
    ]);
    expect(result.delivered).toBe(1);
    expect(succeeded.map((s) => s.id)).toEqual(['evt_next']);
  });
});
