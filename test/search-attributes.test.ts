/**
 * Temporal namespaces without the workflows' search attributes, on the run's dev server: the
 * check names the missing ones and the command that registers them, the API's /readyz and
 * creates answer 503 naming them, and a create on a namespace that lacks `FailureCode` still
 * compensates (deletes its pod, fails its sandbox) instead of failing every workflow task.
 */
import { randomUUID } from 'node:crypto';
import { Client } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createApp } from '../src/api/app.js';
import { operationErrorOf } from '../src/api/failures.js';
import { checkSearchAttributes } from '../src/temporal/search-attributes.js';
import { bearer, createBody, startApiStack, type ApiStack } from './support/api.js';
import { settle, startCreate } from './support/creates.js';
import { withSandboxWorker } from './support/worker.js';
import { waitUntil } from '../tools/wait-until.js';

/** IndexedValueType KEYWORD (temporal.api.enums.v1). */
const KEYWORD = 2;

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
});
afterAll(async () => {
  await api?.stop();
});

/** Registers a fresh namespace with only `attributes` (Keyword) and waits until it serves. */
async function namespaceWith(attributes: string[]): Promise<string> {
  const namespace = `sa-${randomUUID().slice(0, 8)}`;
  const { connection } = api.stack.temporal.client;
  await connection.workflowService.registerNamespace({
    namespace,
    workflowExecutionRetentionPeriod: msToTs(86_400_000),
  });
  if (attributes.length > 0) {
    await waitUntil(
      () =>
        connection.operatorService
          .addSearchAttributes({
            namespace,
            searchAttributes: Object.fromEntries(attributes.map((name) => [name, KEYWORD])),
          })
          .then(
            () => true,
            () => undefined,
          ),
      { what: `search attributes on ${namespace}` },
    );
  }
  await waitUntil(
    async () => {
      const report = await checkSearchAttributes(connection, namespace).catch(() => undefined);
      return report && report.registered.length === attributes.length ? report : undefined;
    },
    { what: `namespace ${namespace} serving its attributes` },
  );
  return namespace;
}

describe('a namespace without the search attributes', () => {
  it('is named by the check with the command that registers the missing ones', async () => {
    const namespace = await namespaceWith(['SandboxId', 'TenantId']);
    const report = await checkSearchAttributes(
      api.stack.temporal.client.connection,
      namespace,
      '127.0.0.1:7233',
    );
    expect(report.missing).toEqual(['Template', 'CreatePhase', 'FailureCode']);
    expect(report.problem).toBe(
      `the Temporal namespace "${namespace}" lacks the search attributes Template, CreatePhase, ` +
        `FailureCode; register them with: temporal operator search-attribute create --address ` +
        `127.0.0.1:7233 --namespace ${namespace} --name Template --name CreatePhase ` +
        `--name FailureCode --type Keyword`,
    );
  });

  it('makes /readyz and creates answer 503 naming them, without storing a sandbox', async () => {
    const namespace = await namespaceWith([]);
    const temporal = new Client({ connection: api.stack.temporal.client.connection, namespace });
    const app = createApp({
      ...api.deps,
      temporal,
      config: { ...api.config, temporalNamespace: namespace },
    });
    const ready = await request(app).get('/readyz').set(bearer(api.tenantA));
    expect(ready.status).toBe(503);
    expect(ready.body.error.message).toContain(
      `search_attributes: the Temporal namespace "${namespace}" lacks the search attributes SandboxId, TenantId, Template, CreatePhase, FailureCode`,
    );
    const created = await request(app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048));
    expect(created.status).toBe(503);
    expect(created.body.error.code).toBe('unavailable');
    expect(created.body.error.message).toContain('temporal operator search-attribute create');
    const listed = await api.stack.store.listSandboxes(api.tenantA.id, { limit: 10 });
    expect(listed.sandboxes).toEqual([]);
  });

  it('still compensates a refused create when FailureCode is missing', async () => {
    const namespace = await namespaceWith(['SandboxId', 'TenantId', 'Template', 'CreatePhase']);
    const { connection } = api.stack.temporal.client;
    const report = await checkSearchAttributes(connection, namespace);
    const taskQueue = `sa-${randomUUID()}`;
    await withSandboxWorker(
      {
        temporal: api.stack.temporal,
        store: api.stack.store,
        kubernetes: api.stack.kubernetes,
        taskQueue,
        namespace: namespace,
      },
      async () => {
        // The API passes the attributes it found registered (src/api/create-flow.ts); the node
        // refuses a 300 MiB disk.
        const client = new Client({ connection, namespace });
        const { handle, input } = await startCreate(
          { store: api.stack.store, temporal: { client }, taskQueue },
          { diskMib: 300, overrides: { searchAttributes: report.registered } },
        );
        const outcome = await Promise.race([
          settle(handle.result()),
          new Promise<{ stuck: true }>((resolve) =>
            setTimeout(() => resolve({ stuck: true }), 30_000),
          ),
        ]);
        expect(outcome, 'the create never finished (its workflow tasks fail)').not.toHaveProperty(
          'stuck',
        );
        expect(operationErrorOf((outcome as { error?: unknown }).error)).toMatchObject({
          code: 'invalid_request',
          message: expect.stringMatching(/the node refused the sandbox/),
        });
        const sandbox = await api.stack.store.getSandboxById(input.sandboxId);
        expect(sandbox).toMatchObject({ state: 'failed', failure: { code: 'invalid_request' } });
        const pods = await api.stack.kubernetes.core.listNamespacedPod({
          namespace: api.stack.namespace,
        });
        expect(pods.items.map((pod) => pod.metadata?.name)).not.toContain(sandbox?.pod.name);
      },
    );
  });
});
