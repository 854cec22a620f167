/**
 * Signed webhooks end to end (docs/webhooks.md): endpoints registered through the API, events
 * emitted by the create's and the delete's store steps, delivered by the `webhookDelivery`
 * workflow over a real dev server to a receiver of the test's own (an HTTP server on loopback,
 * allow-listed for this suite only), which verifies each signature with the `standardwebhooks`
 * library.
 */
import { Writable } from 'node:stream';
import fc from 'fast-check';
import request from 'supertest';
import { Webhook } from 'standardwebhooks';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { run } from '../clients/cli/program.js';
import { workerRegistry } from '../src/activities/metrics.js';
import {
  acceptedCreate,
  awaitOperation,
  bearer,
  createBody,
  finishedCreate,
  startApiStack,
  type ApiStack,
  type OperationBody,
  type TestTenant,
} from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';
import { Receiver } from './support/webhook-receiver.js';
import { announceLostEvent } from '../src/activities/webhook-delivery.js';
import { sweepOrphanPods } from '../src/worker/orphan-sweeper.js';

let api: ApiStack;
const receivers: Receiver[] = [];
beforeAll(async () => {
  api = await startApiStack({
    stack: {
      cluster: { startupDelayMs: 100 },
      learnRootfsFloors: false,
      // The receivers live on 127.0.0.1: allow-listed here, as an operator would for a receiver
      // inside its own network. Every other loopback address stays refused.
      webhooks: { allowedCidrs: ['127.0.0.1/32'], timeoutMs: 5_000, maxResponseBytes: 4096 },
    },
  });
});
afterAll(async () => {
  for (const receiver of receivers) await receiver.stop();
  await api?.stop();
});

async function receiver(port = 0): Promise<Receiver> {
  const started = await new Receiver(port).start();
  receivers.push(started);
  return started;
}

async function register(
  url: string,
  eventTypes = ['sandbox.running', 'sandbox.failed', 'sandbox.deleted'],
  who: TestTenant = api.tenantA,
): Promise<{ id: string; secret: string }> {
  const response = await request(api.app)
    .post('/v1/webhook-endpoints')
    .set(bearer(who))
    .send({ url, event_types: eventTypes });
  expect(response.status, response.text).toBe(201);
  return response.body as { id: string; secret: string };
}

async function deleteSandbox(sandboxId: string, who: TestTenant = api.tenantA): Promise<void> {
  const accepted = await request(api.app).delete(`/v1/sandboxes/${sandboxId}`).set(bearer(who));
  expect(accepted.status, accepted.text).toBe(202);
  await awaitOperation(api.app, who, (accepted.body as OperationBody).id);
}

async function deliveries(endpointId: string, who: TestTenant = api.tenantA) {
  const response = await request(api.app)
    .get(`/v1/webhook-endpoints/${endpointId}/deliveries`)
    .set(bearer(who));
  expect(response.status, response.text).toBe(200);
  return (response.body as { deliveries: Array<Record<string, unknown>> }).deliveries;
}

/** Waits until the receiver has `count` requests about the sandbox. */
function receivedFor(target: Receiver, sandboxId: string, count: number, timeoutMs = 60_000) {
  return waitUntil(
    async () => {
      const got = target.forSandbox(sandboxId);
      return got.length >= count ? got : undefined;
    },
    { timeoutMs, what: `${count} webhook(s) about ${sandboxId}` },
  );
}

describe('webhook endpoints', () => {
  it('registers an endpoint for the caller only, shows its whsec_ secret once, and deletes it', async () => {
    const target = await receiver();
    const created = await register(target.url(), ['sandbox.running']);
    expect(created).toMatchObject({
      id: expect.stringMatching(/^whe_[a-z2-7]{26}$/),
      url: target.url(),
      event_types: ['sandbox.running'],
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{43}=$/),
      previous_secret_expires_at: null,
    });
    const listed = await request(api.app).get('/v1/webhook-endpoints').set(bearer(api.tenantA));
    const mine = (listed.body as { webhook_endpoints: Array<Record<string, unknown>> })
      .webhook_endpoints;
    expect(mine.find((e) => e.id === created.id)).toBeDefined();
    expect(mine.every((e) => !('secret' in e))).toBe(true);

    const theirs = await request(api.app).get('/v1/webhook-endpoints').set(bearer(api.tenantB));
    expect(JSON.stringify(theirs.body)).not.toContain(created.id);
    for (const [method, path] of [
      ['get', `/v1/webhook-endpoints/${created.id}`],
      ['get', `/v1/webhook-endpoints/${created.id}/deliveries`],
      ['post', `/v1/webhook-endpoints/${created.id}/rotate-secret`],
      ['delete', `/v1/webhook-endpoints/${created.id}`],
    ] as const) {
      const answer = await request(api.app)[method](path).set(bearer(api.tenantB));
      expect(answer.status, `${method} ${path} as another tenant`).toBe(404);
    }
    const deleted = await request(api.app)
      .delete(`/v1/webhook-endpoints/${created.id}`)
      .set(bearer(api.tenantA));
    expect(deleted.status).toBe(204);
    const gone = await request(api.app)
      .get(`/v1/webhook-endpoints/${created.id}`)
      .set(bearer(api.tenantA));
    expect(gone.status).toBe(404);
  });

  it('refuses a body naming an unknown event type, a non-http URL, or a tenant', async () => {
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ url: 'https://example.com/h', event_types: ['sandbox.exploded'] }, 'event_types.0'],
      [{ url: 'ftp://example.com/h', event_types: ['sandbox.running'] }, 'url'],
      [{ url: 'https://u:p@example.com/h', event_types: ['sandbox.running'] }, 'url'],
      [{ url: 'https://example.com/h', event_types: [] }, 'event_types'],
      [{ url: 'https://example.com/h', event_types: ['sandbox.running'], tenant: 'b' }, 'tenant'],
    ];
    // Strings that are no URL at all: each a 400 naming the field and the rule, never a 500.
    for (const url of [
      'not a url',
      '',
      'http://',
      'https://',
      'http://:80/',
      'https://exa mple.com/',
      '//hooks.example.com/h',
      '/h',
    ]) {
      cases.push([
        { url, event_types: ['sandbox.running'] },
        'url must be an absolute http or https URL',
      ]);
    }
    for (const [body, field] of cases) {
      const answer = await request(api.app)
        .post('/v1/webhook-endpoints')
        .set(bearer(api.tenantA))
        .send(body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.code).toBe('invalid_request');
      expect(answer.body.error.message).toContain(field);
    }
  });
});

describe('webhook endpoints: the target rule at registration', () => {
  /** POST /v1/webhook-endpoints through `app` as tenant B (which creates no sandbox here). */
  const post = (url: unknown, app = api.app) =>
    request(app)
      .post('/v1/webhook-endpoints')
      .set(bearer(api.tenantB))
      .send({ url, event_types: ['sandbox.deleted'] });
  const removeAll = async () => {
    const listed = await request(api.app).get('/v1/webhook-endpoints').set(bearer(api.tenantB));
    for (const { id } of (listed.body as { webhook_endpoints: Array<{ id: string }> })
      .webhook_endpoints) {
      await request(api.app).delete(`/v1/webhook-endpoints/${id}`).set(bearer(api.tenantB));
    }
  };

  it('refuses a URL delivery may not reach, naming the address, its class and WEBHOOK_ALLOWED_CIDRS', async () => {
    const cases: Array<[string, string, string]> = [
      // 127.0.0.1/32 is allow-listed for this suite; the rest of 127.0.0.0/8 is not.
      ['http://127.0.0.2:9911/hook', '127.0.0.2', 'loopback'],
      [
        'http://169.254.169.254/latest/meta-data/',
        '169.254.169.254',
        'link-local (cloud metadata 169.254.169.254)',
      ],
      ['https://10.1.2.3/hook', '10.1.2.3', 'private'],
      ['http://[::1]:9911/hook', '::1', 'loopback'],
      [
        'http://[::ffff:169.254.169.254]/',
        '::ffff:a9fe:a9fe',
        'link-local (cloud metadata 169.254.169.254)',
      ],
      ['https://203.0.113.10/hook', '203.0.113.10', 'documentation'],
    ];
    for (const [url, address, addressClass] of cases) {
      const answer = await post(url);
      expect(answer.status, url).toBe(400);
      expect(answer.body.error).toMatchObject({
        code: 'invalid_request',
        details: {
          field: 'url',
          address,
          address_class: addressClass,
          setting: 'WEBHOOK_ALLOWED_CIDRS',
        },
      });
      expect(answer.body.error.message).toContain(`${address} (${addressClass})`);
      expect(answer.body.error.message).toContain('WEBHOOK_ALLOWED_CIDRS');
    }
    // A name is resolved first: localhost is 127.0.0.1, refused where that is not allowed.
    const strict = api.appWith({ WEBHOOK_ALLOWED_CIDRS: '' });
    const named = await post('http://localhost:9911/hook', strict);
    expect(named.status).toBe(400);
    expect(named.body.error.message).toMatch(
      /^url localhost resolves to 127\.0\.0\.1 \(loopback\)/,
    );
    // The same URL registers where the operator allowed it (this suite's allow-list).
    const allowed = await post('http://localhost:9911/hook');
    expect(allowed.status, allowed.text).toBe(201);
    await removeAll();
  });

  it('registers a public address literal, and a name that does not resolve (yet) within the bound', async () => {
    try {
      // A public address (not one of ssrf-guard's ranges; 203.0.113.0/24 is documentation, refused).
      // Registered and deleted at once: no event is ever sent to it.
      const literal = await post('https://93.184.215.14/hook');
      expect(literal.status, literal.text).toBe(201);

      // DNS that never answers: accepted after REGISTRATION_LOOKUP_MS (2 s), not held.
      const silent = api.appWith({}, { webhookLookup: () => new Promise(() => undefined) });
      const startedAt = Date.now();
      const unanswered = await post('https://hooks.example.com/sandboxes', silent);
      expect(unanswered.status, unanswered.text).toBe(201);
      expect(Date.now() - startedAt).toBeLessThan(10_000);
      // A name that does not exist: accepted; delivery resolves it again at each attempt.
      const notFound = Object.assign(new Error('getaddrinfo ENOTFOUND hooks.example.com'), {
        code: 'ENOTFOUND',
      });
      const missing = api.appWith({}, { webhookLookup: () => Promise.reject(notFound) });
      expect((await post('https://hooks.example.com/sandboxes', missing)).status).toBe(201);
      // A name that resolves to a refused address: refused.
      const internal = api.appWith(
        {},
        { webhookLookup: async () => [{ address: '10.0.0.7', family: 4 }] },
      );
      const refused = await post('https://hooks.internal.example/h', internal);
      expect(refused.status).toBe(400);
      expect(refused.body.error.message).toContain(
        'hooks.internal.example resolves to 10.0.0.7 (private)',
      );
    } finally {
      await removeAll();
    }
  });

  it('never answers 5xx for any url string (property)', async () => {
    // No DNS query leaves the machine: names "do not exist".
    const app = api.appWith(
      {},
      {
        webhookLookup: () =>
          Promise.reject(Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' })),
      },
    );
    const url = fc.oneof(
      fc.string(),
      fc.webUrl({ withFragments: true, withQueryParameters: true }),
      fc.constantFrom(
        'http://',
        'https://',
        'http:',
        'http:/',
        'http://[',
        'http://[::1',
        'http://%',
        'http://a b',
      ),
      fc
        .tuple(fc.constantFrom('http://', 'https://', 'ftp://', ''), fc.string())
        .map(([scheme, rest]) => scheme + rest),
      fc.jsonValue(),
    );
    try {
      await fc.assert(
        fc.asyncProperty(url, async (value) => {
          const answer = await post(value, app);
          expect(answer.status, JSON.stringify(value)).toBeLessThan(500);
          if (answer.status === 400) {
            expect(answer.body.error.code).toBe('invalid_request');
            expect(answer.body.error.message).toMatch(/^(url|event_types)/);
          } else {
            expect([201, 429], answer.text).toContain(answer.status);
          }
        }),
        { numRuns: 150 },
      );
    } finally {
      await removeAll();
    }
  });
});

describe('webhook delivery', () => {
  it('delivers sandbox.lost when the sweep finds the pod gone, then sandbox.deleted with delete_cause lost', async () => {
    const target = await receiver();
    await register(target.url(), ['sandbox.lost', 'sandbox.deleted']);
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    expect(created.status).toBe('succeeded');
    const pod = (await api.stack.store.getSandboxById(created.sandbox_id))!.pod;
    await api.stack.kubernetes.core.deleteNamespacedPod({
      name: pod.name!,
      namespace: api.stack.namespace,
    });
    // As the worker wires its sweep (src/worker/serve.ts).
    const announcer = {
      client: api.stack.temporal.client,
      taskQueue: api.stack.taskQueue,
      store: api.stack.store,
    };
    const sweep = await sweepOrphanPods({
      ...api.stack,
      graceMs: 0,
      announceLost: (sandbox) => announceLostEvent(announcer, sandbox),
    });
    expect(sweep.lost).toContain(created.sandbox_id);
    await receivedFor(target, created.sandbox_id, 1);
    await deleteSandbox(created.sandbox_id);
    const got = await receivedFor(target, created.sandbox_id, 2);
    expect(got.map((r) => [r.json.type, r.json.data.state, r.json.data.delete_cause])).toEqual([
      ['sandbox.lost', 'lost', undefined],
      ['sandbox.deleted', 'deleted', 'lost'],
    ]);
  });

  it('delivers running then deleted, each id once, signed so the library verifies it', async () => {
    const target = await receiver();
    const endpoint = await register(target.url());
    const other = await receiver();
    await register(other.url(), undefined, api.tenantB);

    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    expect(created.status).toBe('succeeded');
    await receivedFor(target, created.sandbox_id, 1);
    await deleteSandbox(created.sandbox_id);
    const got = await receivedFor(target, created.sandbox_id, 2);

    expect(got.map((r) => r.json.type)).toEqual(['sandbox.running', 'sandbox.deleted']);
    expect(got.map((r) => r.json.data.state)).toEqual(['running', 'deleted']);
    const ids = got.map((r) => r.headers['webhook-id']);
    expect(new Set(ids).size).toBe(2);
    for (const delivery of got) {
      expect(delivery.headers['webhook-id']).toMatch(/^evt_[0-9a-f]{32}$/);
      const verified = new Webhook(endpoint.secret).verify(delivery.body, delivery.headers);
      expect(verified).toMatchObject({ type: delivery.json.type });
      expect(() =>
        new Webhook(`whsec_${Buffer.alloc(32).toString('base64')}`).verify(
          delivery.body,
          delivery.headers,
        ),
      ).toThrow();
    }
    // Another tenant's endpoint hears nothing of this sandbox.
    expect(other.forSandbox(created.sandbox_id)).toEqual([]);
    const attempts = await waitUntil(async () => {
      const rows = await deliveries(endpoint.id);
      return rows.length >= 2 ? rows : undefined;
    });
    expect(attempts.map((a) => [a.event_type, a.status, a.http_status])).toEqual([
      ['sandbox.deleted', 'succeeded', 204],
      ['sandbox.running', 'succeeded', 204],
    ]);
    // Nothing more arrives: each event once. A sleep: an absence is what is proved.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(target.forSandbox(created.sandbox_id)).toHaveLength(2);
  });

  it('delivers sandbox.failed, naming the code, when the node refuses the create', async () => {
    const target = await receiver();
    const endpoint = await register(target.url(), ['sandbox.failed']);
    const created = await finishedCreate(api.app, api.tenantA, createBody(300));
    expect(created.status).toBe('failed');
    const [got] = await receivedFor(target, created.sandbox_id, 1);
    expect(got!.json).toMatchObject({
      type: 'sandbox.failed',
      data: { state: 'failed', failure: { code: 'invalid_request' } },
    });
    new Webhook(endpoint.secret).verify(got!.body, got!.headers);
  });

  it('delivers sandbox.failed (cancelled) then sandbox.deleted when a delete cancels a create', async () => {
    const target = await receiver();
    await register(target.url());
    // Hold the node so the create is still waiting when the delete lands.
    const node = api.stack.cluster.node as unknown as { options: { startupDelayMs: number } };
    node.options.startupDelayMs = 60_000;
    let sandboxId: string;
    try {
      sandboxId = (await acceptedCreate(api.app, api.tenantA, createBody(2048))).sandbox_id;
      await deleteSandbox(sandboxId);
    } finally {
      node.options.startupDelayMs = 100;
    }
    const got = await receivedFor(target, sandboxId, 2);
    expect(got.map((r) => [r.json.type, r.json.data.state])).toEqual([
      ['sandbox.failed', 'failed'],
      ['sandbox.deleted', 'deleted'],
    ]);
    expect(got[0]!.json).toMatchObject({ data: { failure: { code: 'cancelled' } } });
  });

  it('still delivers, with the same id, to a receiver that was down while the events happened', async () => {
    // A port nothing listens on yet: take one, then let it go.
    const probe = await new Receiver().start();
    const port = probe.port;
    await probe.stop();
    const endpoint = await register(`http://127.0.0.1:${port}/hook`, ['sandbox.running']);

    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    expect(created.status).toBe('succeeded');
    const failures = await waitUntil(
      async () => {
        const rows = await deliveries(endpoint.id);
        return rows.filter((r) => r.status === 'failed').length >= 2 ? rows : undefined;
      },
      { what: 'two failed attempts while the receiver is down' },
    );
    expect(failures[0]).toMatchObject({ status: 'failed', http_status: null });
    expect(String(failures[0]!.error)).toMatch(/ECONNREFUSED/);

    const target = await receiver(port);
    const [got] = await receivedFor(target, created.sandbox_id, 1);
    expect(got!.headers['webhook-id']).toBe(failures[0]!.event_id);
    new Webhook(endpoint.secret).verify(got!.body, got!.headers);
    const after = await waitUntil(async () => {
      const rows = await deliveries(endpoint.id);
      return rows[0]?.status === 'succeeded' ? rows : undefined;
    });
    expect(after[0]!.attempt).toBeGreaterThan(2);
  });

  it('refuses a loopback target that is not allow-listed, without retrying, and keeps the event for a recover', async () => {
    const target = await receiver();
    // 127.0.0.2 reaches the same host on Linux, but the workers allow only 127.0.0.1/32. An API
    // whose allow-list is wider registers it, as one did before an operator narrowed the list.
    const wider = api.appWith({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' });
    const registered = await request(wider)
      .post('/v1/webhook-endpoints')
      .set(bearer(api.tenantA))
      .send({ url: `http://127.0.0.2:${target.port}/hook`, event_types: ['sandbox.running'] });
    expect(registered.status, registered.text).toBe(201);
    const endpoint = registered.body as { id: string };
    const since = new Date().toISOString();
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    const [refused] = await waitUntil(async () => {
      const rows = await deliveries(endpoint.id);
      return rows.length > 0 ? rows : undefined;
    });
    expect(refused).toMatchObject({ status: 'refused', attempt: 1, http_status: null });
    const counted = await workerRegistry.getSingleMetricAsString(
      'durable_sandbox_webhook_deliveries_total',
    );
    expect(counted).toContain('durable_sandbox_webhook_deliveries_total{status="refused"} 1');
    expect(String(refused!.error)).toContain('127.0.0.2 (loopback)');
    expect(String(refused!.error)).toContain(
      `the event is kept: once the address is allowed, recover it (durable-sandbox webhooks recover ${endpoint.id}`,
    );
    // Kept, not dropped: the store holds its state (refused) and its body.
    const eventId = String(refused!.event_id);
    await waitUntil(async () => {
      const state = await api.stack.store.webhooks.eventState(endpoint.id, eventId);
      return state?.status === 'refused' ? state : undefined;
    });
    expect(await api.stack.store.webhooks.getEvent(eventId)).toBeDefined();
    // A sleep: that no retry comes is what is proved.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(await deliveries(endpoint.id)).toHaveLength(1);
    expect(target.forSandbox(created.sandbox_id)).toEqual([]);

    // A recover sends it again with the checks of any delivery: still refused here, still kept.
    const recovered = await request(api.app)
      .post(`/v1/webhook-endpoints/${endpoint.id}:recover`)
      .set(bearer(api.tenantA))
      .send({ since });
    expect(recovered.status, recovered.text).toBe(202);
    expect(recovered.body).toEqual({ endpoint_id: endpoint.id, since, queued: 1 });
    const again = await waitUntil(async () => {
      const rows = await deliveries(endpoint.id);
      return rows.length >= 2 ? rows : undefined;
    });
    expect(again[0]).toMatchObject({ status: 'refused', event_id: eventId });
    await waitUntil(async () => {
      const state = await api.stack.store.webhooks.eventState(endpoint.id, eventId);
      return state?.status === 'refused' && state.round === 1 ? state : undefined;
    });
    expect(target.forSandbox(created.sandbox_id)).toEqual([]);
  });

  it('keeps recovered events queued when Temporal cannot be reached, and a repeated recover sends them once', async () => {
    const target = await receiver();
    const wider = api.appWith({ WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' });
    const registered = await request(wider)
      .post('/v1/webhook-endpoints')
      .set(bearer(api.tenantA))
      .send({ url: `http://127.0.0.3:${target.port}/hook`, event_types: ['sandbox.running'] });
    expect(registered.status, registered.text).toBe(201);
    const endpoint = registered.body as { id: string };
    const since = new Date().toISOString();
    await finishedCreate(api.app, api.tenantA, createBody(2048));
    const [refused] = await waitUntil(async () => {
      const rows = await deliveries(endpoint.id);
      return rows.length > 0 ? rows : undefined;
    });
    const eventId = String(refused!.event_id);
    await waitUntil(async () => {
      const state = await api.stack.store.webhooks.eventState(endpoint.id, eventId);
      return state?.status === 'refused' ? state : undefined;
    });

    // Temporal down while recovering: 503, the event stays queued (round 1), nothing started.
    const client = api.stack.temporal.client;
    const workflow = Object.create(client.workflow) as typeof client.workflow;
    Object.defineProperty(workflow, 'signalWithStart', {
      value: () => Promise.reject(new Error('frontend unavailable')),
    });
    const temporal = Object.create(client) as typeof client;
    Object.defineProperty(temporal, 'workflow', { value: workflow });
    const down = await request(api.appWith({}, { temporal }))
      .post(`/v1/webhook-endpoints/${endpoint.id}:recover`)
      .set(bearer(api.tenantA))
      .send({ since });
    expect(down.status, down.text).toBe(503);
    expect(down.body.error).toMatchObject({ code: 'unavailable', details: { queued: 1 } });
    expect(down.body.error.message).toContain('they stay queued: repeat the recover');
    expect(await api.stack.store.webhooks.eventState(endpoint.id, eventId)).toMatchObject({
      status: 'queued',
      round: 1,
    });

    // Repeated once Temporal answers: queued again (round 2), attempted once more.
    const repeated = await request(api.app)
      .post(`/v1/webhook-endpoints/${endpoint.id}:recover`)
      .set(bearer(api.tenantA))
      .send({ since });
    expect(repeated.status, repeated.text).toBe(202);
    expect(repeated.body.queued).toBe(1);
    await waitUntil(async () => {
      const state = await api.stack.store.webhooks.eventState(endpoint.id, eventId);
      return state?.status === 'refused' && state.round === 2 ? state : undefined;
    });
    // A sleep: that the round-1 queueing sends nothing is what is proved.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect((await deliveries(endpoint.id)).map((row) => row.status)).toEqual([
      'refused',
      'refused',
    ]);
    await request(api.app).delete(`/v1/webhook-endpoints/${endpoint.id}`).set(bearer(api.tenantA));
  });

  it('answers a recover 404 for another tenant, 400 for a bad since, and 202 with 0 when nothing is to send', async () => {
    const target = await receiver();
    const endpoint = await register(target.url(), ['sandbox.running']);
    const recover = (body: unknown, who: TestTenant = api.tenantA, id = endpoint.id) =>
      request(api.app)
        .post(`/v1/webhook-endpoints/${id}:recover`)
        .set(bearer(who))
        .send(body as object);
    const since = new Date(Date.now() - 3_600_000).toISOString();
    expect((await recover({ since }, api.tenantB)).status).toBe(404);
    expect((await recover({ since }, api.tenantA, 'whe_nope')).status).toBe(404);
    for (const [body, message] of [
      [{}, 'since is required, an RFC 3339 time'],
      [{ since: 'yesterday' }, 'since is required, an RFC 3339 time'],
      [{ since: '2026-12-06' }, 'since is required, an RFC 3339 time'],
      [
        { since: new Date(Date.now() + 3_600_000).toISOString() },
        'since must not be in the future',
      ],
      [
        { since: new Date(Date.now() - 8 * 86_400_000).toISOString() },
        'since must be within the last 7 days',
      ],
      [{ since, until: since }, 'unknown field until'],
    ] as const) {
      const answer = await recover(body);
      expect(answer.status, JSON.stringify(body)).toBe(400);
      expect(answer.body.error.code).toBe('invalid_request');
      expect(answer.body.error.message).toContain(message);
    }
    const nothing = await recover({ since });
    expect(nothing.status, nothing.text).toBe(202);
    expect(nothing.body).toMatchObject({ endpoint_id: endpoint.id, queued: 0 });
    await request(api.app).delete(`/v1/webhook-endpoints/${endpoint.id}`).set(bearer(api.tenantA));
  });

  it('signs with both the new and the previous secret after a rotation', async () => {
    const target = await receiver();
    const endpoint = await register(target.url(), ['sandbox.running', 'sandbox.deleted']);
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    const [before] = await receivedFor(target, created.sandbox_id, 1);
    expect(before!.headers['webhook-signature']!.split(' ')).toHaveLength(1);

    const rotated = await request(api.app)
      .post(`/v1/webhook-endpoints/${endpoint.id}/rotate-secret`)
      .set(bearer(api.tenantA));
    expect(rotated.status, rotated.text).toBe(200);
    const fresh = rotated.body as { secret: string; previous_secret_expires_at: string };
    expect(fresh.secret).not.toBe(endpoint.secret);
    expect(Date.parse(fresh.previous_secret_expires_at)).toBeGreaterThan(Date.now());

    await deleteSandbox(created.sandbox_id);
    const [, after] = await receivedFor(target, created.sandbox_id, 2);
    expect(after!.json.type).toBe('sandbox.deleted');
    expect(after!.headers['webhook-signature']!.split(' ')).toHaveLength(2);
    new Webhook(fresh.secret).verify(after!.body, after!.headers);
    new Webhook(endpoint.secret).verify(after!.body, after!.headers);
  });

  it('does not follow a redirect', async () => {
    const target = await receiver();
    target.status = 307;
    const endpoint = await register(target.url(), ['sandbox.running']);
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    const [attempt] = await waitUntil(async () => {
      const rows = await deliveries(endpoint.id);
      return rows.length > 0 ? rows : undefined;
    });
    expect(attempt).toMatchObject({ status: 'failed', http_status: 307 });
    expect(String(attempt!.error)).toContain('redirects are not followed');
    expect(target.forSandbox(created.sandbox_id).length).toBeGreaterThanOrEqual(1);
    await request(api.app).delete(`/v1/webhook-endpoints/${endpoint.id}`).set(bearer(api.tenantA));
  });
});

class Capture extends Writable {
  text = '';
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    done();
  }
}

describe('what the delivery trusts', () => {
  it('delivers an event id signalled twice once, even to a workflow that did not deliver it', async () => {
    const target = await receiver();
    const endpoint = await register(target.url(), ['sandbox.running']);
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    const [first] = await receivedFor(target, created.sandbox_id, 1);
    const ref = {
      id: first!.headers['webhook-id'],
      type: 'sandbox.running',
      sandboxId: created.sandbox_id,
    };
    // Two more signals of the same event to another workflow (as retried steps would send after
    // the first workflow ended): the event was delivered in its round, so nothing is sent.
    const workflowId = `webhook-delivery-test-${endpoint.id}-${created.sandbox_id}`;
    for (let n = 0; n < 2; n++) {
      await api.stack.temporal.client.workflow.signalWithStart('webhookDelivery', {
        workflowId,
        taskQueue: api.stack.taskQueue,
        args: [{ endpointId: endpoint.id, sandboxId: created.sandbox_id }],
        signal: 'webhookEvent',
        signalArgs: [ref],
      });
    }
    await waitUntil(
      async () =>
        api.stack.logs.some(
          (line) =>
            line.msg === 'webhook event not this delivery to send; skipped' &&
            line.event_id === ref.id,
        ),
      { what: 'the second delivery skipping the delivered event' },
    );
    // A sleep: that the repeated signals deliver nothing more is what is proved.
    await new Promise((resolve) => setTimeout(resolve, 1_500));
    expect(target.forSandbox(created.sandbox_id)).toHaveLength(1);
  });

  it("does not deliver a tenant's event to another tenant's endpoint, whatever a workflow's input says", async () => {
    const mine = await receiver();
    await register(mine.url(), ['sandbox.running']);
    const theirs = await receiver();
    const foreign = await register(theirs.url(), ['sandbox.running'], api.tenantB);
    const created = await finishedCreate(api.app, api.tenantA, createBody(2048));
    const [got] = await receivedFor(mine, created.sandbox_id, 1);

    // A workflow started by someone other than the worker, naming tenant A's real event.
    const handle = await api.stack.temporal.client.workflow.signalWithStart('webhookDelivery', {
      workflowId: `webhook-delivery-forged-${created.sandbox_id}`,
      taskQueue: api.stack.taskQueue,
      args: [{ endpointId: foreign.id, sandboxId: created.sandbox_id }],
      signal: 'webhookEvent',
      signalArgs: [
        { id: got!.headers['webhook-id'], type: 'sandbox.running', sandboxId: created.sandbox_id },
      ],
    });
    await waitUntil(
      async () => api.stack.logs.some((line) => line.msg === 'webhook delivery not admitted'),
      { what: "the worker's refusal of the forged delivery (log `webhook delivery not admitted`)" },
    );
    await handle.terminate('test over').catch(() => undefined);
    expect(theirs.forSandbox(created.sandbox_id)).toEqual([]);
    expect(await deliveries(foreign.id, api.tenantB)).toEqual([]);
  });
});

describe('webhooks CLI', () => {
  it('creates, lists, rotates, shows deliveries of, recovers and deletes an endpoint', async () => {
    const { url, close } = await api.listen();
    const cli = async (...args: string[]) => {
      const stdout = new Capture();
      const stderr = new Capture();
      const env = { DURABLE_SANDBOX_URL: url, DURABLE_SANDBOX_TOKEN: api.tenantA.token };
      const code = await run(args, { stdout, stderr, env });
      return { code, stdout: stdout.text, stderr: stderr.text };
    };
    try {
      const target = await receiver();
      const created = await cli(
        '-o',
        'json',
        'webhooks',
        'create',
        target.url(),
        '--events',
        'sandbox.running',
      );
      expect(created.code, created.stderr).toBe(0);
      const endpoint = JSON.parse(created.stdout) as {
        id: string;
        secret: string;
        event_types: string[];
      };
      expect(endpoint.secret).toMatch(/^whsec_/);
      expect(endpoint.event_types).toEqual(['sandbox.running']);

      const listed = await cli('webhooks', 'list');
      expect(listed.stdout).toContain(endpoint.id);
      expect(listed.stdout).not.toContain(endpoint.secret);

      const rotated = await cli('webhooks', 'rotate-secret', endpoint.id);
      expect(rotated.code, rotated.stderr).toBe(0);
      expect(rotated.stdout).toMatch(/secret {2}whsec_/);

      const sandbox = await finishedCreate(api.app, api.tenantA, createBody(2048));
      await receivedFor(target, sandbox.sandbox_id, 1);
      const shown = await waitUntil(async () => {
        const result = await cli('webhooks', 'deliveries', endpoint.id);
        return result.stdout.includes('succeeded') ? result : undefined;
      });
      expect(shown.stdout).toContain('sandbox.running');

      const recovered = await cli('webhooks', 'recover', endpoint.id, '--since', '1h');
      expect(recovered.code, recovered.stderr).toBe(0);
      expect(recovered.stdout).toMatch(/^0 events of whe_\w+ queued again \(emitted since \S+Z\)/);
      const recoveredJson = await cli(
        '-o',
        'json',
        'webhooks',
        'recover',
        endpoint.id,
        '--since',
        '2h',
      );
      expect(JSON.parse(recoveredJson.stdout)).toMatchObject({
        endpoint_id: endpoint.id,
        queued: 0,
      });
      const badSince = await cli('webhooks', 'recover', endpoint.id, '--since', 'a while');
      expect(badSince.code).toBe(2);
      expect(badSince.stderr).toContain('--since');

      const removed = await cli('webhooks', 'delete', endpoint.id);
      expect(removed.code, removed.stderr).toBe(0);
      const again = await cli('webhooks', 'delete', endpoint.id);
      expect(again.code).toBe(1);
      expect(again.stderr).toContain('not_found');

      const bad = await cli('webhooks', 'create', target.url(), '--events', 'sandbox.bogus');
      expect(bad.code).toBe(2);
    } finally {
      await close();
    }
  });
});
