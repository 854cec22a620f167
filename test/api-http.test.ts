/**
 * The HTTP surface of the API: authentication, the error body, validation before any workflow,
 * health and readiness, and the OpenAPI document matching the routes.
 */
import { once } from 'node:events';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { Client } from '@temporalio/client';
import fc from 'fast-check';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { AUTH_REFUSALS } from '../src/api/auth-refusals.js';
import { NOT_READY_MESSAGE } from '../src/api/handlers/health.js';
import { createLogger } from '../src/process/logger.js';
import { openApiDocument } from '../src/api/openapi.js';
import { openApiPath, ROUTES } from '../src/api/routes.js';
import type { Store } from '../src/store/index.js';
import { bearer, createBody, startApiStack, type ApiStack } from './support/api.js';

let api: ApiStack;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
});
afterAll(async () => {
  await api?.stop();
});

function expectErrorBody(body: unknown, code: string): void {
  expect(body).toEqual({
    error: { code, message: expect.any(String), details: expect.any(Object) },
  });
}

/** An error body as the API answers it. */
interface ErrorJson {
  error: { code: string; message: string; details: Record<string, unknown> };
}

/** A client whose `workflow.start` always fails, everything else real. */
function temporalFailingToStart(client: Client): Client {
  const workflow = Object.create(client.workflow) as Client['workflow'];
  Object.defineProperty(workflow, 'start', {
    value: () => Promise.reject(new Error('frontend unavailable')),
  });
  const failing = Object.create(client) as Client;
  Object.defineProperty(failing, 'workflow', { value: workflow });
  return failing;
}

describe('authentication', () => {
  it('answers 401 unauthenticated without a token, with a wrong token, or a malformed header', async () => {
    for (const [header, reason, challenge] of [
      [undefined, 'missing_token', 'Bearer'],
      ['Basic abc', 'missing_token', 'Bearer'],
      [`Bearer${api.tenantA.token}`, 'missing_token', 'Bearer'],
      [
        'Bearer nope',
        'unknown_token',
        'Bearer error="invalid_token", error_description="the bearer token is not valid"',
      ],
    ]) {
      const call = request(api.app).get('/v1/sandboxes');
      const response = await (header ? call.set('Authorization', header) : call);
      expect(response.status, `Authorization: ${header}`).toBe(401);
      expectErrorBody(response.body, 'unauthenticated');
      expect(response.body.error.details).toEqual({ reason });
      expect(response.headers['www-authenticate']).toBe(challenge);
    }
  });

  it('never starts a create for an unauthenticated request', async () => {
    const response = await request(api.app).post('/v1/sandboxes').send(createBody(2048));
    expect(response.status).toBe(401);
  });
});

describe('errors', () => {
  it('answers 404 not_found with the error body for an unknown route', async () => {
    for (const [method, path] of [
      ['get', '/v2/sandboxes'],
      ['put', '/v2/sandboxes'],
      ['get', '/'],
    ] as const) {
      const response = await request(api.app)[method](path).set(bearer(api.tenantA));
      expect(response.status, `${method} ${path}`).toBe(404);
      expectErrorBody(response.body, 'not_found');
    }
  });

  it('answers 405 method_not_allowed with Allow for a served path asked with another method', async () => {
    const put = await request(api.app)
      .put('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send({ template: 'base' });
    expect(put.status, put.text).toBe(405);
    expect(put.headers.allow).toBe('POST, GET, HEAD, OPTIONS');
    expectErrorBody(put.body, 'method_not_allowed');
    expect(put.body.error.message).toBe(
      'PUT is not allowed on /v1/sandboxes; allowed: POST, GET, HEAD, OPTIONS',
    );
    // One source: the body lists what the header lists.
    expect(put.body.error.details.allowed.join(', ')).toBe(put.headers.allow);
    const putOne = await request(api.app).put('/v1/sandboxes/sbx_x').set(bearer(api.tenantA));
    expect(putOne.status).toBe(405);
    expect(putOne.headers.allow).toBe('GET, HEAD, DELETE, PATCH, OPTIONS');
    const options = await request(api.app).options('/v1/operations/op_x/cancel');
    expect(options.status).toBe(204);
    expect(options.headers.allow).toBe('POST, OPTIONS');
  });

  it('answers a custom method path (AIP-136) with its own Allow, not that of the resource it is on', async () => {
    const options = await request(api.app)
      .options('/v1/sandboxes/sbx_x:extend')
      .set(bearer(api.tenantA));
    expect(options.status).toBe(204);
    expect(options.headers.allow).toBe('POST, OPTIONS');
    // Not a 404 naming the sandbox `sbx_x:extend`: the path is served, the method is not.
    const get = await request(api.app).get('/v1/sandboxes/sbx_x:extend').set(bearer(api.tenantA));
    expect(get.status, get.text).toBe(405);
    expect(get.headers.allow).toBe('POST, OPTIONS');
    expectErrorBody(get.body, 'method_not_allowed');
    const del = await request(api.app)
      .delete('/v1/sandboxes/sbx_x:extend')
      .set(bearer(api.tenantA));
    expect(del.status, del.text).toBe(405);
    // The resource itself keeps its own.
    const resource = await request(api.app).options('/v1/sandboxes/sbx_x');
    expect(resource.headers.allow).toBe('GET, HEAD, DELETE, PATCH, OPTIONS');
  });

  it('answers 415 unsupported_media_type for a form-encoded body (curl -d without a header), creating nothing', async () => {
    const start = vi.spyOn(api.stack.temporal.client.workflow, 'start');
    try {
      for (const path of ['/v1/sandboxes', '/sync/v1/sandboxes']) {
        const response = await request(api.app)
          .post(path)
          .set(bearer(api.tenantA))
          .set('Content-Type', 'application/x-www-form-urlencoded')
          .send(JSON.stringify(createBody(2048)));
        expect(response.status, response.text).toBe(415);
        expectErrorBody(response.body, 'unsupported_media_type');
        expect(response.body.error.message).toBe(
          'the request body must be JSON: send the header Content-Type: application/json ' +
            '(this request sent Content-Type application/x-www-form-urlencoded)',
        );
      }
      expect(start).not.toHaveBeenCalled();
    } finally {
      start.mockRestore();
    }
    // Other JSON types pass on to the JSON parser.
    const vendor = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .set('Content-Type', 'application/vnd.example+json; charset=utf-8')
      .send('{"template": "base",');
    expect(vendor.status).toBe(400);
  });

  describe('one Content-Type rule for every route with a body', () => {
    let url: string;
    let server: Server;
    beforeAll(async () => {
      server = api.appWith({ ADMIN_TOKENS: 'ops:operator-token-for-media-types' }).listen(0);
      await once(server, 'listening');
      url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });
    afterAll(() => server?.close());
    const tenant = () => ({ authorization: bearer(api.tenantA).Authorization });
    const operator = { authorization: 'Bearer operator-token-for-media-types' };
    // fetch sends no Content-Type for a body of bytes.
    const bytes = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));

    it('answers 415 for a body without Content-Type, naming the header to add', async () => {
      const response = await fetch(`${url}/v1/sandboxes`, {
        method: 'POST',
        headers: tenant(),
        body: bytes(createBody(2048)),
      });
      expect(response.status).toBe(415);
      const body = (await response.json()) as ErrorJson;
      expectErrorBody(body, 'unsupported_media_type');
      expect(body.error.message).toBe(
        'the request body must be JSON: send the header Content-Type: application/json ' +
          '(this request sent no Content-Type)',
      );
      expect(body.error.details).toEqual({ content_type: null, expected: 'application/json' });
    });

    it('answers 415 on the operator routes as on the tenant routes (curl -d to scale a pool)', async () => {
      for (const headers of [
        { ...operator, 'content-type': 'application/x-www-form-urlencoded' },
        operator,
      ]) {
        const response = await fetch(`${url}/admin/v1/warm-pools/base/scale`, {
          method: 'PUT',
          headers,
          body: bytes({ size: 2 }),
        });
        expect(response.status, JSON.stringify(headers)).toBe(415);
        const body = (await response.json()) as ErrorJson;
        expectErrorBody(body, 'unsupported_media_type');
        expect(body.error.message).toContain('send the header Content-Type: application/json');
      }
      // With the header, the same body reaches the route (base has no pool here: 404).
      const json = await fetch(`${url}/admin/v1/warm-pools/base/scale`, {
        method: 'PUT',
        headers: { ...operator, 'content-type': 'application/json' },
        body: bytes({ size: 2 }),
      });
      expect(json.status).toBe(404);
    });

    it('needs no Content-Type for a request without a body (a cancel), and does for one with', async () => {
      const { body: accepted } = await request(api.app)
        .post('/v1/sandboxes')
        .set(bearer(api.tenantA))
        .send(createBody(2048));
      const cancel = (init: RequestInit) =>
        fetch(`${url}/v1/operations/${accepted.id}/cancel`, {
          method: 'POST',
          headers: tenant(),
          ...init,
        });
      const withBody = await cancel({ body: bytes({}) });
      expect(withBody.status).toBe(415);
      // fetch sends Content-Length: 0 for a POST without a body: no body, no rule.
      const withoutBody = await cancel({});
      expect([200, 202, 409], await withoutBody.text()).toContain(withoutBody.status);
    });
  });

  it('answers 400 invalid_request for malformed JSON', async () => {
    const response = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .set('Content-Type', 'application/json')
      .send('{"template": "base",');
    expect(response.status).toBe(400);
    expectErrorBody(response.body, 'invalid_request');
    expect(response.body.error.message).toContain('not valid JSON');
  });

  it('answers 400 invalid_request for a body whose gzip or brotli encoding is corrupt', async () => {
    for (const encoding of ['gzip', 'br']) {
      const response = await request(api.app)
        .post('/v1/sandboxes')
        .set(bearer(api.tenantA))
        .set('Content-Type', 'application/json')
        .set('Content-Encoding', encoding)
        .send('xx');
      expect(response.status, encoding).toBe(400);
      expectErrorBody(response.body, 'invalid_request');
      expect(response.body.error.message).toContain('Content-Encoding');
    }
  });

  it('answers 400 invalid_request for a body over 64 KiB', async () => {
    const body = JSON.stringify({ ...createBody(2048), padding: 'x'.repeat(65 * 1024) });
    const response = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .set('Content-Type', 'application/json')
      .send(body);
    expect(response.status).toBe(400);
    expectErrorBody(response.body, 'invalid_request');
    expect(response.body.error.message).toContain('64 KiB');
  });

  it('answers 500 internal without a stack when something unexpected fails', async () => {
    const broken: Store = {
      ...api.stack.store,
      getSandbox: () => Promise.reject(new Error('disk on fire')),
    };
    const app = api.appWith({}, { store: broken });
    const response = await request(app)
      .get('/v1/sandboxes/sbx_aaaaaaaaaaaaaaaaaaaaaaaaaa')
      .set(bearer(api.tenantA));
    expect(response.status).toBe(500);
    expectErrorBody(response.body, 'internal');
    expect(response.text).not.toContain('disk on fire');
    expect(response.text).not.toMatch(/at .*\.ts/);
  });

  it('answers 503 unavailable and fails the sandbox when the workflow cannot be started', async () => {
    const app = api.appWith({}, { temporal: temporalFailingToStart(api.stack.temporal.client) });
    const response = await request(app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .send(createBody(2048));
    expect(response.status, response.text).toBe(503);
    expectErrorBody(response.body, 'unavailable');
    const sandbox = await api.stack.store.getSandbox(
      api.tenantA.id,
      response.body.error.details.sandbox_id as string,
    );
    expect(sandbox).toMatchObject({ state: 'failed', failure: { code: 'unavailable' } });
  });
});

describe('validation', () => {
  const cases: Array<[string, unknown, string | RegExp]> = [
    ['a negative disk', createBody(-1), 'resources.disk_mib must be a positive integer'],
    [
      'a cpu finer than a millicore',
      { ...createBody(2048), resources: { cpu: 0.0005, memory_mib: 1, disk_mib: 1 } },
      'resources.cpu must be a whole number of millicores (1m is 0.001 cores)',
    ],
    [
      'a cpu quantity finer than a millicore',
      { ...createBody(2048), resources: { cpu: '1500u', memory_mib: 1, disk_mib: 1 } },
      'resources.cpu must be a whole number of millicores',
    ],
    [
      'a cpu that is not a quantity',
      { ...createBody(2048), resources: { cpu: '2 cores', memory_mib: 1, disk_mib: 1 } },
      'resources.cpu must be a Kubernetes CPU quantity: cores (0.5, 2) or millicores ("500m")',
    ],
    [
      'a zero cpu',
      { ...createBody(2048), resources: { cpu: '0m', memory_mib: 1, disk_mib: 1 } },
      'resources.cpu must be more than 0',
    ],
    [
      'a negative cpu',
      { ...createBody(2048), resources: { cpu: -0.5, memory_mib: 1, disk_mib: 1 } },
      'resources.cpu must be more than 0',
    ],
    [
      'a cpu over the limit',
      { ...createBody(2048), resources: { cpu: '64001m', memory_mib: 1, disk_mib: 1 } },
      'resources.cpu must be at most 64',
    ],
    [
      'a cpu in a unit of bytes (a memory amount in the cpu field)',
      { ...createBody(2048), resources: { cpu: '1Gi', memory_mib: 1, disk_mib: 1 } },
      'resources.cpu must be a CPU quantity such as 0.5, 2 or 500m (Gi is a unit of bytes, for memory or disk)',
    ],
    [
      'a missing cpu',
      { template: 'base', resources: { memory_mib: 1, disk_mib: 1 } },
      'resources.cpu is required',
    ],
    [
      'a string size',
      { template: 'base', resources: { cpu: 1, memory_mib: '1024', disk_mib: 1 } },
      'resources.memory_mib must be a positive integer',
    ],
    [
      'a memory quantity where MiB are asked',
      { template: 'base', resources: { cpu: 1, memory_mib: '1Gi', disk_mib: 1 } },
      'resources.memory_mib must be a positive integer of MiB, a JSON number (1024, not "1Gi")',
    ],
    [
      'a missing size',
      { template: 'base', resources: { cpu: 1, memory_mib: 1 } },
      'resources.disk_mib is required',
    ],
    ['a huge disk', createBody(1_048_577), 'resources.disk_mib must be at most 1048576'],
    [
      'an unknown template',
      { ...createBody(2048), template: 'gpu' },
      'template must be one of: base',
    ],
    ['a missing template', { resources: createBody(2048).resources }, 'template is required'],
    ['an unknown field', createBody(2048, { region: 'eu' }), 'region is not a known field'],
    [
      'an unknown nested field',
      { template: 'base', resources: { cpu: 1, memory_mib: 1, disk_mib: 1, gpu: 1 } },
      'resources.gpu is not a known field',
    ],
    [
      'an unknown field in place of a required one (memory for memory_mib)',
      { template: 'base', resources: { cpu: 1, memory: 1024, disk_mib: 2048 } },
      // The real mistake leads the message; the missing field follows in details.problems.
      /^resources\.memory is not a known field/,
    ],
    ['an array body', [createBody(2048)], 'body must be a JSON object'],
    [
      'resources as a string',
      { template: 'base', resources: 'big' },
      'resources must be an object',
    ],
  ];
  for (const [what, body, message] of cases) {
    it(`answers 400 naming the field for ${what}`, async () => {
      for (const path of ['/v1/sandboxes', '/sync/v1/sandboxes']) {
        const response = await request(api.app)
          .post(path)
          .set(bearer(api.tenantA))
          .send(body as object);
        expect(response.status, `${path}: ${response.text}`).toBe(400);
        expectErrorBody(response.body, 'invalid_request');
        if (message instanceof RegExp) expect(response.body.error.message).toMatch(message);
        else expect(response.body.error.message).toContain(message);
      }
    });
  }

  it('answers 400 for an empty body and for bad list parameters', async () => {
    const empty = await request(api.app).post('/v1/sandboxes').set(bearer(api.tenantA));
    expect(empty.status).toBe(400);
    for (const path of [
      '/v1/sandboxes?state=zombie',
      '/v1/sandboxes?limit=0',
      '/v1/sandboxes?limit=201',
      '/v1/sandboxes?limit=ten',
      '/v1/sandboxes?colour=red',
      '/v1/operations?status=exploded',
      '/v1/operations?limit=1&limit=2',
    ]) {
      const response = await request(api.app).get(path).set(bearer(api.tenantA));
      expect(response.status, `${path}: ${response.text}`).toBe(400);
      expectErrorBody(response.body, 'invalid_request');
    }
  });

  it('answers 400 for an unusable Idempotency-Key', async () => {
    const response = await request(api.app)
      .post('/v1/sandboxes')
      .set(bearer(api.tenantA))
      .set('Idempotency-Key', 'k'.repeat(256))
      .send(createBody(2048));
    expect(response.status).toBe(400);
    expect(response.body.error.message).toContain('Idempotency-Key');
  });

  it('answers 404 for ids of the wrong shape without asking anyone', async () => {
    for (const path of ['/v1/sandboxes/nope', '/v1/operations/op_x', '/v1/operations/../../x']) {
      const response = await request(api.app).get(path).set(bearer(api.tenantA));
      expect(response.status, path).toBe(404);
      expectErrorBody(response.body, 'not_found');
    }
  });

  it('never answers 5xx and never starts a workflow for an invalid body (property)', async () => {
    const start = vi.spyOn(api.stack.temporal.client.workflow, 'start');
    const tenant = api.tenantB;
    const size = fc.oneof(
      fc.integer({ min: -5, max: 5000 }),
      fc.double(),
      fc.string(),
      fc.constant(null),
      fc.boolean(),
    );
    const body = fc.oneof(
      fc.jsonValue(),
      fc.record(
        {
          template: fc.oneof(
            fc.constantFrom('base', 'gpu', '', '__proto__', 'constructor'),
            fc.jsonValue(),
          ),
          resources: fc.oneof(
            fc.record(
              { cpu: size, memory_mib: size, disk_mib: size, extra: size },
              { requiredKeys: [] },
            ),
            fc.jsonValue(),
          ),
          extra: fc.jsonValue(),
        },
        { requiredKeys: [] },
      ),
    );
    let accepted = 0;
    try {
      await fc.assert(
        fc.asyncProperty(body, async (value) => {
          const response = await request(api.app)
            .post('/v1/sandboxes')
            .set(bearer(tenant))
            .set('Content-Type', 'application/json')
            .send(JSON.stringify(value));
          expect(response.status).toBeLessThan(500);
          if (response.status === 202) {
            accepted += 1;
          } else {
            expect(response.status).toBe(400);
            expectErrorBody(response.body, 'invalid_request');
          }
          expect(start).toHaveBeenCalledTimes(accepted);
        }),
        { numRuns: 100 },
      );
    } finally {
      start.mockRestore();
    }
    const stored = await api.stack.store.listSandboxes(tenant.id, { limit: 200 });
    expect(stored.sandboxes).toHaveLength(accepted);
  });
});

describe('health and the OpenAPI document', () => {
  it('answers /healthz, /readyz and /openapi.json without a token', async () => {
    expect((await request(api.app).get('/healthz')).body).toEqual({ status: 'ok' });
    const ready = await request(api.app).get('/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready' });
    const openapi = await request(api.app).get('/openapi.json');
    expect(openapi.status).toBe(200);
    expect(openapi.body.openapi).toBe('3.1.0');
  });

  it('answers /readyz 503 when the store does not answer', async () => {
    const app = api.appWith(
      {},
      { store: { ...api.stack.store, ping: () => Promise.reject(new Error('gone')) } },
    );
    const response = await request(app).get('/readyz').set(bearer(api.tenantA));
    expect(response.status).toBe(503);
    expectErrorBody(response.body, 'unavailable');
    expect(response.body.error.message).toBe('not ready: store: gone');
    expect(response.body.error.details.checks).toMatchObject({ temporal: 'ok', store: 'gone' });
  });

  it('answers /readyz with the checks to a valid token only: without one, ready or not and nothing more', async () => {
    const ready = await request(api.app).get('/readyz').set(bearer(api.tenantA));
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({
      status: 'ready',
      checks: { temporal: 'ok', store: 'ok', search_attributes: 'ok', cluster: 'ok' },
    });
    let log = '';
    const logStream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        log += chunk.toString();
        done();
      },
    });
    const app = api.appWith(
      {},
      {
        logger: createLogger('api', 'info', logStream),
        store: {
          ...api.stack.store,
          ping: () => Promise.reject(new Error('connect ECONNREFUSED 10.0.0.7:5432')),
        },
      },
    );
    const bare = await request(app).get('/readyz');
    expect(bare.status).toBe(503);
    expect(bare.body).toEqual({ error: { code: 'unavailable', message: NOT_READY_MESSAGE } });
    expect(bare.text).not.toContain('10.0.0.7');
    // The reason is in the server's log.
    expect(log).toContain('connect ECONNREFUSED 10.0.0.7:5432');
    const refused = await request(app).get('/readyz').set('Authorization', 'Bearer not-a-token');
    expect(refused.status).toBe(401);
    expect(refused.text).not.toContain('10.0.0.7');
  });

  it('documents every route the app serves, and serves every documented route', () => {
    const served = new Set<string>();
    const router = (
      api.app as unknown as {
        router: {
          stack: Array<{
            route?: {
              path: string;
              methods: Record<string, boolean>;
              stack: Array<{ name: string }>;
            };
          }>;
        };
      }
    ).router;
    for (const layer of router.stack) {
      // `app.all` layers are the 405 answers for other methods on served paths.
      if (!layer.route || layer.route.stack.some((entry) => entry.name === 'methodNotAllowed')) {
        continue;
      }
      for (const method of Object.keys(layer.route.methods)) {
        served.add(`${method.toUpperCase()} ${openApiPath(layer.route.path)}`);
      }
    }
    const documented = new Set<string>();
    for (const [path, item] of Object.entries(openApiDocument().paths)) {
      for (const method of Object.keys(item)) documented.add(`${method.toUpperCase()} ${path}`);
    }
    expect([...served].sort()).toEqual([...documented].sort());
    expect(served.size).toBe(ROUTES.length);
  });

  it('documents the bearer and JWT schemes, and on every route that needs a token its 401 reasons and its 503 with Retry-After', () => {
    const document = openApiDocument() as unknown as {
      security: unknown;
      paths: Record<string, Record<string, { responses: Record<string, Documented> }>>;
      components: {
        securitySchemes: Record<string, Record<string, string>>;
        responses: Record<string, Documented>;
        schemas: { AuthRefusalReason: { enum: string[] } };
      };
    };
    interface Documented {
      $ref?: string;
      description?: string;
      headers?: Record<string, unknown>;
    }
    expect(document.security).toEqual([{ bearer: [] }, { jwt: [] }]);
    expect(document.components.securitySchemes.jwt).toMatchObject({
      type: 'http',
      scheme: 'bearer',
      bearerFormat: 'JWT',
    });
    const reasons = document.components.schemas.AuthRefusalReason.enum;
    expect([...reasons].sort()).toEqual(Object.keys(AUTH_REFUSALS).sort());
    const { Unauthenticated, AuthUnavailable } = document.components.responses;
    expect(Unauthenticated?.headers).toHaveProperty('WWW-Authenticate');
    for (const route of ROUTES.filter((candidate) => candidate.auth)) {
      const what = `${route.method} ${route.path}`;
      const responses = document.paths[openApiPath(route.path)]?.[route.method]?.responses ?? {};
      expect(responses['401'], what).toEqual({ $ref: '#/components/responses/Unauthenticated' });
      const unavailable =
        responses['503']?.$ref === '#/components/responses/AuthUnavailable'
          ? AuthUnavailable
          : responses['503'];
      expect(unavailable?.description, what).toContain('jwks_unavailable');
      expect(unavailable?.headers, what).toHaveProperty('Retry-After');
    }
  });

  it('documents which routes need no token, as the route table says', () => {
    const paths = openApiDocument().paths;
    for (const route of ROUTES) {
      const operation = paths[openApiPath(route.path)]?.[route.method];
      expect(operation?.operationId).toBe(route.name);
      expect(operation?.security, route.path).toEqual(route.auth ? undefined : []);
    }
  });
});
