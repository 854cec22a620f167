/**
 * What the Temporal UI shows for an operation, read through the Temporal API the UI reads:
 * the workflow's static summary and details (describe), each activity's summary (the history's
 * user metadata), the failure, and the operation's link to its UI page.
 */
import { temporal } from '@temporalio/proto';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  awaitOperation,
  bearer,
  createBody,
  finishedCreate,
  startApiStack,
  type ApiStack,
  type OperationBody,
} from './support/api.js';
import { activitySummaries as activitySummariesOf } from './support/temporal.js';

const UI = 'http://ui.example:8233';
const EventType = temporal.api.enums.v1.EventType;

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({
    // This suite watches the node refuse disk 300 again and again.
    stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false },
    env: { TEMPORAL_UI_URL: `${UI}/` },
  });
});
afterAll(async () => {
  await api?.stop();
});

const activitySummaries = (workflowId: string) =>
  activitySummariesOf(api.stack.temporal.client, workflowId);

describe('Temporal UI', () => {
  it('a create workflow carries a static summary and details naming sandbox, template and disk', async () => {
    const op = await finishedCreate(api.app, api.tenantA, createBody(300));
    const description = await api.stack.temporal.client.workflow.getHandle(op.id).describe();
    expect(await description.staticSummary()).toBe(
      `create ${op.sandbox_id} (template base, disk 300 MiB, cpu 1, memory 256 MiB)`,
    );
    const details = await description.staticDetails();
    expect(details).toContain(`**Sandbox** ${op.sandbox_id} (tenant ${api.tenantA.id}`);
    expect(details).toContain('**Template** base, image `ghcr.io/durable-sandbox/base:1`');
    expect(details).toContain('**Deadline** 60 s after the start');
  });

  it('every activity of a refused create has a summary saying what it does', async () => {
    const op = await finishedCreate(api.app, api.tenantA, createBody(300));
    const activities = await activitySummaries(op.id);
    // The store writes (recordOperationOutcome, retireExecution) are local activities: markers
    // in the history, not scheduled activities.
    expect(activities.map((a) => a.type)).toEqual(['createPod', 'awaitPodReady', 'deletePod']);
    const [createPod, awaitPodReady, deletePod] = activities;
    expect(createPod?.summary).toBe(
      `create pod of ${op.sandbox_id} (template base, disk 300 MiB, generation 1)`,
    );
    const podName = op.error?.details.pod_name as string;
    expect(awaitPodReady?.summary).toBe(`wait for pod ${podName}'s IP or the node's refusal`);
    expect(deletePod?.summary).toMatch(new RegExp(`^delete pod ${podName} \\(uid `));
  });

  it("the failure is the node's reason, without a cause repeating it with stack traces", async () => {
    const op = await finishedCreate(api.app, api.tenantA, createBody(300));
    const handle = api.stack.temporal.client.workflow.getHandle(op.id);
    // The operation's outcome is final before compensation ends; the workflow closes after it.
    await handle.result().catch(() => undefined);
    const history = await handle.fetchHistory();
    const failed = history.events?.find(
      (event) => event.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
    )?.workflowExecutionFailedEventAttributes?.failure;
    expect(failed?.message).toBe(op.error?.message);
    expect(failed?.message).toMatch(/^the node refused the sandbox: .*451 MiB$/);
    expect(failed?.applicationFailureInfo?.type).toBe('InvalidRequest');
    expect(failed?.cause ?? undefined).toBeUndefined();
  });

  it('the operation links to its workflow page in the Temporal UI', async () => {
    const op = await finishedCreate(api.app, api.tenantA, createBody(300));
    const { runId } = await api.stack.temporal.client.workflow.getHandle(op.id).describe();
    expect((op as OperationBody & { temporal_ui_url: string }).temporal_ui_url).toBe(
      `${UI}/namespaces/default/workflows/${op.id}/${runId}/history`,
    );
  });

  it('a delete workflow carries a summary and its activities summaries', async () => {
    const created = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048));
    const running = await awaitOperation(api.app, api.tenantA, created.body.id as string);
    expect(running.status).toBe('succeeded');
    const accepted = await request(api.app)
      .delete(`/v1/sandboxes/${running.sandbox_id}`)
      .set(bearer(api.tenantA));
    expect(accepted.status, accepted.text).toBe(202);
    const op = await awaitOperation(api.app, api.tenantA, accepted.body.id as string);
    expect(op.status).toBe('succeeded');
    const description = await api.stack.temporal.client.workflow.getHandle(op.id).describe();
    expect(await description.staticSummary()).toBe(
      `delete ${running.sandbox_id} (template base, disk 2048 MiB, cpu 1, memory 256 MiB)`,
    );
    const activities = await activitySummaries(op.id);
    expect(activities.length).toBeGreaterThan(0);
    for (const activity of activities)
      expect(activity.summary, activity.type ?? undefined).toMatch(/\S/);
  });
});
