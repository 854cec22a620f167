/**
 * Labels and filters over HTTP (docs/api.md, "Labels and filters"): labels on a create, their
 * 400s naming the label and the rule, part of the `Idempotency-Key` body; `PATCH
 * /v1/sandboxes/{id}` with an update mask; the list filters with a malformed selector's
 * position, and page tokens bound to their filter; the operation filters; and the pod, which
 * carries the tenant and none of the caller's labels. Real dev server and worker, the simulated
 * cluster.
 */
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { POD_LABELS } from '../src/kubernetes/pod-spec.js';
import {
  acceptedCreate,
  bearer,
  createBody,
  finishedCreate,
  startApiStack,
  type ApiStack,
} from './support/api.js';

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 50 } } });
});
afterAll(async () => {
  await api?.stop();
});

interface SandboxBody {
  id: string;
  state: string;
  labels: Record<string, string>;
  updated_at: string;
}

interface ErrorBody {
  error: {
    code: string;
    message: string;
    details: { problems?: { field: string; message: string; position?: number }[] };
  };
}

const getSandbox = (id: string) =>
  request(api.app).get(`/v1/sandboxes/${id}`).set(bearer(api.tenantA));
const patch = (id: string, body: unknown, mask?: string) =>
  request(api.app)
    .patch(`/v1/sandboxes/${id}`)
    .query(mask === undefined ? {} : { update_mask: mask })
    .set(bearer(api.tenantA))
    .send(body as object);
const list = (query: Record<string, string | string[]>) =>
  request(api.app).get('/v1/sandboxes').query(query).set(bearer(api.tenantA));

describe('labels on a create', () => {
  it('are stored and shown on the sandbox, in the list, and in the operation result', async () => {
    const labels = { team: 'a', 'example.com/env': 'prod' };
    const operation = await finishedCreate(api.app, api.tenantA, createBody(2048, { labels }));

    expect(operation.status).toBe('succeeded');
    expect(operation.result?.sandbox.labels).toEqual(labels);
    expect(((await getSandbox(operation.sandbox_id)).body as SandboxBody).labels).toEqual(labels);
    const page = await list({ label_selector: 'team=a,example.com/env in (prod)' });
    expect((page.body.sandboxes as SandboxBody[]).map((s) => s.id)).toContain(operation.sandbox_id);
  });

  it('the pod carries the tenant and none of the caller labels', async () => {
    const operation = await finishedCreate(
      api.app,
      api.tenantA,
      createBody(2048, { labels: { team: 'steer', 'app.kubernetes.io/name': 'x' } }),
    );
    const pods = await api.stack.kubernetes.core.listNamespacedPod({
      namespace: api.stack.kubernetes.namespace,
      labelSelector: `${POD_LABELS.sandboxId}=${operation.sandbox_id}`,
    });
    const pod = pods.items[0];

    expect(pod?.metadata?.labels?.[POD_LABELS.tenant]).toBe(api.tenantA.id);
    expect(Object.keys(pod?.metadata?.labels ?? {}).sort()).toEqual(
      [POD_LABELS.managedBy, POD_LABELS.sandboxId, POD_LABELS.tenant].sort(),
    );
    expect(JSON.stringify(pod?.metadata?.annotations)).not.toContain('steer');
  });

  it.each([
    [
      { 'Bad Key': 'x' },
      'labels["Bad Key"] key is not a valid label key: name part must consist of',
    ],
    [
      { team: 'a b' },
      'labels["team"] value "a b" is invalid: a valid label must be an empty string',
    ],
    [
      { team: 'x'.repeat(64) },
      'labels["team"] value "' +
        'x'.repeat(64) +
        '" is invalid: must be no more than 63 characters',
    ],
    [{ ['a'.repeat(64)]: 'x' }, 'name part must be no more than 63 characters'],
    [{ 'Example.com/a': 'x' }, 'prefix part a lowercase RFC 1123 subdomain'],
    [{ team: 1 }, 'labels["team"] value must be a string'],
    [
      Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`k${i}`, 'v'])),
      'labels has 65 labels; a sandbox may carry at most 64',
    ],
    [['team=a'], 'labels must be a JSON object'],
  ])(
    'refuses %j with 400 naming the label and the rule, storing nothing',
    async (labels, message) => {
      const before = (await api.stack.store.listSandboxes(api.tenantA.id, { limit: 200 })).sandboxes
        .length;
      const response = await request(api.app)
        .post('/v1/sandboxes')
        .set(bearer(api.tenantA))
        .send(createBody(2048, { labels }));

      expect(response.status, response.text).toBe(400);
      expect((response.body as ErrorBody).error.code).toBe('invalid_request');
      expect((response.body as ErrorBody).error.message).toContain(message);
      const after = (await api.stack.store.listSandboxes(api.tenantA.id, { limit: 200 })).sandboxes
        .length;
      expect(after).toBe(before);
    },
  );

  it('are part of the Idempotency-Key body: same labels replay, other labels answer 409', async () => {
    const key = { 'Idempotency-Key': `labels-${Date.now()}` };
    const first = await acceptedCreate(
      api.app,
      api.tenantA,
      createBody(2048, { labels: { team: 'a', env: 'dev' } }),
      key,
    );
    const replay = await acceptedCreate(
      api.app,
      api.tenantA,
      createBody(2048, { labels: { env: 'dev', team: 'a' } }),
      key,
    );
    const other = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .set(key)
      .send(createBody(2048, { labels: { team: 'b', env: 'dev' } }));

    expect(replay.id).toBe(first.id);
    expect(other.status).toBe(409);
    expect((other.body as ErrorBody).error.code).toBe('idempotency_conflict');
  });

  it('none and {} are the same body under one Idempotency-Key', async () => {
    const key = { 'Idempotency-Key': `no-labels-${Date.now()}` };
    const first = await acceptedCreate(api.app, api.tenantA, createBody(2048), key);
    const again = await acceptedCreate(api.app, api.tenantA, createBody(2048, { labels: {} }), key);
    expect(again.id).toBe(first.id);
  });
});

describe('PATCH /v1/sandboxes/{id}', () => {
  let sandboxId: string;
  beforeAll(async () => {
    const operation = await acceptedCreate(
      api.app,
      api.tenantA,
      createBody(2048, { labels: { team: 'a', env: 'dev', keep: 'x' } }),
    );
    sandboxId = operation.sandbox_id;
  });

  it('update_mask=labels replaces the map; the same request again changes nothing', async () => {
    const first = await patch(sandboxId, { labels: { team: 'b', keep: 'x' } }, 'labels');
    const second = await patch(sandboxId, { labels: { keep: 'x', team: 'b' } }, 'labels');

    expect(first.status, first.text).toBe(200);
    expect((first.body as SandboxBody).labels).toEqual({ team: 'b', keep: 'x' });
    expect(second.body).toEqual(first.body);
    expect((await getSandbox(sandboxId)).body).toMatchObject({ labels: { team: 'b', keep: 'x' } });
  });

  it('labels.<key> paths set or remove those keys alone, backticks or not', async () => {
    await patch(sandboxId, { labels: { team: 'b', keep: 'x' } });
    const response = await patch(
      sandboxId,
      { labels: { 'example.com/owner': 'bob', ignored: 'y' } },
      'labels.`example.com/owner`,labels.team',
    );

    expect(response.status, response.text).toBe(200);
    expect((response.body as SandboxBody).labels).toEqual({
      keep: 'x',
      'example.com/owner': 'bob',
    });
  });

  it('a selector finds the sandbox by its new labels, and no longer by its old', async () => {
    await patch(sandboxId, { labels: { relabelled: 'yes' } });
    const ids = async (selector: string) =>
      ((await list({ label_selector: selector })).body.sandboxes as SandboxBody[]).map((s) => s.id);

    expect(await ids('relabelled=yes')).toEqual([sandboxId]);
    expect(await ids('keep=x')).not.toContain(sandboxId);
  });

  it.each([
    [{ labels: { 'Bad Key': 'x' } }, undefined, 'labels["Bad Key"] key is not a valid label key'],
    [{ template: 'base' }, undefined, "template cannot be changed: a sandbox's labels alone can"],
    [{ labels: {} }, 'template', 'query.update_mask path "template" cannot be changed'],
    [
      { labels: {} },
      'labels.Bad Key',
      'query.update_mask path "labels.Bad Key" names no label key',
    ],
    [{ labels: {} }, 'labels,labels.team', 'query.update_mask names labels whole'],
    [{}, 'labels', 'body.labels is required'],
    [
      { labels: Object.fromEntries(Array.from({ length: 64 }, (_, i) => [`n${i}`, 'v'])) },
      Array.from({ length: 64 }, (_, i) => `labels.n${i}`).join(','),
      'labels has 65 labels; a sandbox may carry at most 64',
    ],
  ])('refuses %j (mask %j) with 400: %s', async (body, mask, message) => {
    await patch(sandboxId, { labels: { one: '1' } });
    const response = await patch(sandboxId, body, mask);

    expect(response.status, response.text).toBe(400);
    expect((response.body as ErrorBody).error.message).toContain(message);
    expect(((await getSandbox(sandboxId)).body as SandboxBody).labels).toEqual({ one: '1' });
  });

  it("answers 404 for another tenant's sandbox and changes nothing", async () => {
    await patch(sandboxId, { labels: { mine: 'yes' } });
    const response = await request(api.app)
      .patch(`/v1/sandboxes/${sandboxId}`)
      .set(bearer(api.tenantB))
      .send({ labels: {} });

    expect(response.status).toBe(404);
    expect(((await getSandbox(sandboxId)).body as SandboxBody).labels).toEqual({ mine: 'yes' });
  });
});

describe('GET /v1/sandboxes filters', () => {
  it('answers a malformed selector with 400 saying where', async () => {
    const response = await list({ label_selector: 'team=a,env in (prod' });

    expect(response.status).toBe(400);
    const { error } = response.body as ErrorBody;
    expect(error.message).toContain('label_selector is not a valid label selector');
    expect(error.message).toContain('at character 20');
    expect(error.details.problems?.[0]).toMatchObject({ field: 'label_selector', position: 20 });
  });

  it('takes several states, repeated or comma separated, and refuses an unknown one', async () => {
    expect((await list({ state: ['creating', 'running'] })).status).toBe(200);
    expect((await list({ state: 'creating,running' })).status).toBe(200);
    const bad = await list({ state: 'creating,sleeping' });
    expect(bad.status).toBe(400);
    expect((bad.body as ErrorBody).error.message).toContain('state must be one or more of');
  });

  it('refuses a creation time that is not RFC 3339', async () => {
    for (const time of ['yesterday', '2026-12-03', '2026-02-30T00:00:00Z', '2026-12-03T10:00:00']) {
      const response = await list({ create_time_after: time });
      expect(response.status, time).toBe(400);
      expect((response.body as ErrorBody).error.message).toContain(
        'create_time_after must be an RFC 3339 time',
      );
    }
    expect((await list({ create_time_before: '2026-12-03T10:00:00.123456+02:00' })).status).toBe(
      200,
    );
  });

  it('answers a page token of another filter with 400', async () => {
    await acceptedCreate(api.app, api.tenantA, createBody(2048, { labels: { paged: 'yes' } }));
    await acceptedCreate(api.app, api.tenantA, createBody(2048, { labels: { paged: 'yes' } }));
    const first = await list({ label_selector: 'paged=yes', limit: '1' });
    const token = first.body.next_page_token as string;
    expect(token).toEqual(expect.any(String));

    const same = await list({ label_selector: 'paged==yes', limit: '1', page_token: token });
    const other = await list({ label_selector: 'paged=no', limit: '1', page_token: token });
    expect(same.status).toBe(200);
    expect(other.status).toBe(400);
    expect((other.body as ErrorBody).error.message).toContain(
      'page_token was issued for another filter',
    );
  });
});

describe('GET /v1/operations filters', () => {
  it('by type and sandbox; an unknown type or a bad sandbox id answers 400', async () => {
    const operation = await acceptedCreate(api.app, api.tenantA, createBody(2048));
    const response = await request(api.app)
      .get('/v1/operations')
      .query({
        type: 'sandbox.create',
        sandbox_id: operation.sandbox_id,
        status: 'running,succeeded',
      })
      .set(bearer(api.tenantA));

    expect(response.status, response.text).toBe(200);
    expect((response.body.operations as { id: string }[]).map((op) => op.id)).toEqual([
      operation.id,
    ]);
    for (const query of [{ type: 'sandbox.resize' }, { sandbox_id: 'op_x' }]) {
      const bad = await request(api.app)
        .get('/v1/operations')
        .query(query)
        .set(bearer(api.tenantA));
      expect(bad.status, JSON.stringify(query)).toBe(400);
    }
  });
});
