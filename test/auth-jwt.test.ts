/**
 * JWT bearer tokens (docs/security.md) against a real JWKS served over HTTP by the test, with
 * keys made by jose: the tenant from the configured claim, each refusal reason as a 401 with the
 * RFC 6750 challenge (logged once, counted), key rotation through jose's cached key set, a JWKS
 * that cannot be fetched answering 503 (never 200), random and garbled tokens never let in, and
 * one create with a JWT through the real stack.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { Express } from 'express';
import fc from 'fast-check';
import { CompactSign, SignJWT, type JWTPayload } from 'jose';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AUTH_REFUSALS, challenge, type AuthRefusalReason } from '../src/api/auth-refusals.js';
import { createLogger } from '../src/process/logger.js';
import { createBody, finishedCreate, startApiStack, type ApiStack } from './support/api.js';
import {
  IdentityProvider,
  makeKey,
  TEST_AUDIENCE,
  TEST_ISSUER,
  type ProviderKey,
} from './support/identity-provider.js';

let idp: IdentityProvider;
let rogue: ProviderKey;
let api: ApiStack;
beforeAll(async () => {
  idp = await IdentityProvider.start();
  rogue = await makeKey('rogue', 'RS256');
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } }, env: idp.env() });
});
afterAll(async () => {
  await api?.stop();
  await idp?.stop();
});

const bearerOf = (token: string) => ({ Authorization: `Bearer ${token}` });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** `GET /v1/sandboxes` with a token. */
function list(app: Express, token: string) {
  return request(app).get('/v1/sandboxes').set(bearerOf(token));
}

function expectRefused(
  response: request.Response,
  reason: AuthRefusalReason,
  what = reason as string,
): void {
  expect(response.status, `${what}: ${response.text}`).toBe(401);
  expect(response.body, what).toEqual({
    error: { code: 'unauthenticated', message: AUTH_REFUSALS[reason].message, details: { reason } },
  });
  expect(response.headers['www-authenticate'], what).toBe(challenge(reason));
}

function expectUnavailable(response: request.Response, what: string): void {
  expect(response.status, `${what}: ${response.text}`).toBe(503);
  expect(response.body.error, what).toMatchObject({
    code: 'unavailable',
    details: { reason: 'jwks_unavailable' },
  });
  expect(response.headers['retry-after'], what).toBe('5');
}

/** A compact JWS of arbitrary bytes (not a JSON claims set), signed by a published key. */
function signedBytes(key: ProviderKey, payload: string): Promise<string> {
  return new CompactSign(new TextEncoder().encode(payload))
    .setProtectedHeader({ alg: key.alg, kid: key.kid })
    .sign(key.privateKey);
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');

/** A sample of a Prometheus scrape, 0 when absent. */
async function refusalCount(reason: string): Promise<number> {
  const text = (await request(api.app).get('/metrics')).text;
  const series = `durable_sandbox_auth_refusals_total{reason="${reason}"} `;
  const line = text.split('\n').find((candidate) => candidate.startsWith(series));
  return line ? Number(line.slice(series.length)) : 0;
}

describe('a valid JWT', () => {
  it('is accepted signed by either published key, RS256 and ES256 alike', async () => {
    for (const key of idp.published) {
      const tenant = `jwt-${randomUUID().slice(0, 8)}`;
      const response = await list(api.app, await idp.sign({ tenant }, { key }));
      expect(response.status, `${key.alg}: ${response.text}`).toBe(200);
      expect(response.body.sandboxes).toEqual([]);
    }
  });

  it('is accepted while expired by less than the clock tolerance (30 s), refused past it', async () => {
    expect((await list(api.app, await idp.sign({}, { expiresInS: -10 }))).status).toBe(200);
    expectRefused(await list(api.app, await idp.sign({}, { expiresInS: -40 })), 'expired');
    const strict = api.appWith(idp.env({ OIDC_CLOCK_TOLERANCE_MS: '0' }));
    expectRefused(await list(strict, await idp.sign({}, { expiresInS: -10 })), 'expired');
  });

  it('works beside the static tokens of API_TOKENS', async () => {
    expect((await list(api.app, api.tenantA.token)).status).toBe(200);
  });

  it('creates a sandbox for its tenant through the real stack, which no other tenant sees', async () => {
    const tenant = `jwt-${randomUUID().slice(0, 8)}`;
    const token = await idp.sign({ tenant });
    const done = await finishedCreate(api.app, { id: tenant, token }, createBody(2048));
    expect(done).toMatchObject({ status: 'succeeded', error: null });
    const sandboxId = done.sandbox_id;
    expect(await api.stack.store.getSandbox(tenant, sandboxId)).toMatchObject({
      state: 'running',
    });
    const mine = await list(api.app, token);
    expect(mine.body.sandboxes.map((sandbox: { id: string }) => sandbox.id)).toEqual([sandboxId]);
    const other = await request(api.app)
      .get(`/v1/sandboxes/${sandboxId}`)
      .set(bearerOf(api.tenantA.token));
    expect(other.status).toBe(404);
  });
});

describe('refusals', () => {
  const cases: Array<[string, AuthRefusalReason, () => Promise<string | undefined>]> = [
    ['no Authorization header', 'missing_token', () => Promise.resolve(undefined)],
    ['a token of neither kind', 'unknown_token', () => Promise.resolve('not-a-token')],
    ['an expired token', 'expired', () => idp.sign({}, { expiresInS: -3600 })],
    ['a token not valid yet', 'not_yet_valid', () => idp.sign({}, { notBeforeInS: 3600 })],
    ['another issuer', 'wrong_issuer', () => idp.sign({ iss: 'https://evil.test.invalid' })],
    ['no issuer', 'wrong_issuer', () => idp.sign({ iss: undefined })],
    ['another audience', 'wrong_audience', () => idp.sign({ aud: 'someone-else' })],
    ['no audience', 'wrong_audience', () => idp.sign({ aud: undefined })],
    ['a kid the JWKS lacks', 'unknown_key', () => idp.sign({}, { key: rogue })],
    [
      'a published kid over another key',
      'bad_signature',
      () => idp.sign({}, { key: rogue, kid: 'rsa-1' }),
    ],
    [
      'PS256, not in OIDC_ALGORITHMS',
      'algorithm_not_allowed',
      async () => idp.sign({}, { key: await makeKey('ps-1', 'PS256') }),
    ],
    [
      'HS256 with a shared secret',
      'algorithm_not_allowed',
      () =>
        new SignJWT({ iss: TEST_ISSUER, aud: TEST_AUDIENCE, tenant: 'acme' })
          .setProtectedHeader({ alg: 'HS256', kid: 'rsa-1' })
          .setExpirationTime('5m')
          .sign(new TextEncoder().encode('x'.repeat(32))),
    ],
    ['alg none', 'algorithm_not_allowed', () => Promise.resolve(none())],
    ['no tenant claim', 'missing_tenant_claim', () => idp.sign({ tenant: undefined })],
    ['a numeric tenant claim', 'missing_tenant_claim', () => idp.sign({ tenant: 42 })],
    ['a tenant claim with a space', 'missing_tenant_claim', () => idp.sign({ tenant: 'a b' })],
    ['no exp', 'malformed', () => idp.sign({}, { expiresInS: null })],
    [
      'a string exp',
      'malformed',
      () => idp.sign({ exp: 'tomorrow' } as unknown as JWTPayload, { expiresInS: null }),
    ],
    ['a header that is not JSON', 'malformed', () => Promise.resolve('bm9wZQ.bm9wZQ.bm9wZQ')],
    [
      'a signed payload that is not JSON',
      'malformed',
      () => signedBytes(idp.published[0]!, 'not json'),
    ],
  ];
  for (const [what, reason, token] of cases) {
    it(`answers 401 ${reason} for ${what}`, async () => {
      const presented = await token();
      const call = request(api.app).get('/v1/sandboxes');
      expectRefused(await (presented ? call.set(bearerOf(presented)) : call), reason, what);
    });
  }

  it('says invalid_token in WWW-Authenticate only when a token was sent (RFC 6750 3.1)', async () => {
    expect((await request(api.app).get('/v1/sandboxes')).headers['www-authenticate']).toBe(
      'Bearer',
    );
    const expired = await list(api.app, await idp.sign({}, { expiresInS: -3600 }));
    expect(expired.headers['www-authenticate']).toBe(
      'Bearer error="invalid_token", error_description="the token has expired"',
    );
    for (const { message } of Object.values(AUTH_REFUSALS)) {
      // error_description's characters (RFC 6750 section 3): no quote, no backslash, printable.
      expect(message).toMatch(/^[\x20\x21\x23-\x5b\x5d-\x7e]+$/);
    }
  });

  it('logs each refusal once with the request id, never the token, and counts it by reason', async () => {
    const capture = new LogCapture();
    const app = api.appWith(idp.env(), { logger: createLogger('api', 'info', capture) });
    const token = await idp.sign({ aud: 'someone-else' });
    const before = await refusalCount('wrong_audience');
    const response = await list(app, token);
    expectRefused(response, 'wrong_audience');
    const refusals = capture.lines.filter((line) => line.msg === 'authentication refused');
    expect(refusals).toEqual([
      expect.objectContaining({
        reason: 'wrong_audience',
        credential: 'jwt',
        request_id: response.headers['x-request-id'],
      }),
    ]);
    expect(capture.text).not.toContain(token);
    expect(capture.text).not.toContain(token.split('.')[2]);
    expect(await refusalCount('wrong_audience')).toBe(before + 1);
  });
});

describe('key rotation', () => {
  it('picks up a new kid after the cooldown, and refuses a removed key once the set is fetched again', async () => {
    const [k1, k2, k3] = await Promise.all([makeKey('k1'), makeKey('k2'), makeKey('k3')]);
    const provider = await IdentityProvider.start([k1!]);
    try {
      const app = api.appWith(provider.env({ OIDC_JWKS_COOLDOWN_MS: '300' }));
      expect((await list(app, await provider.sign({}, { key: k1 }))).status).toBe(200);
      expect((await list(app, await provider.sign({}, { key: k1 }))).status).toBe(200);
      expect(provider.fetches, 'one fetch serves both tokens').toBe(1);

      provider.published = [k1!, k2!];
      // A sleep: the cooldown is wall-clock time the cache must see pass; nothing to poll.
      await sleep(400); // past the cooldown since the last fetch
      expect((await list(app, await provider.sign({}, { key: k2 }))).status).toBe(200);
      expect(provider.fetches, 'the unknown kid fetched the set again').toBe(2);

      provider.published = [k2!, k3!];
      await sleep(400); // a sleep: past the cooldown again (wall-clock time, nothing to poll)
      expect((await list(app, await provider.sign({}, { key: k3 }))).status).toBe(200);
      expect(provider.fetches).toBe(3);
      expectRefused(await list(app, await provider.sign({}, { key: k1 })), 'unknown_key');
      expect(provider.fetches, 'within the cooldown: no fetch').toBe(3);
    } finally {
      await provider.stop();
    }
  });

  it('fetches the set at most once per cooldown however many unknown kids are sent', async () => {
    const provider = await IdentityProvider.start([await makeKey('only')]);
    try {
      const app = api.appWith(provider.env({ OIDC_JWKS_COOLDOWN_MS: '60000' }));
      expect((await list(app, await provider.sign())).status).toBe(200);
      for (let i = 0; i < 5; i += 1) {
        const key = await makeKey(`sprayed-${i}`, 'ES256');
        expectRefused(await list(app, await provider.sign({}, { key })), 'unknown_key');
      }
      expect(provider.fetches).toBe(1);
    } finally {
      await provider.stop();
    }
  });

  it('fetches the set again once it is older than OIDC_JWKS_CACHE_MAX_AGE_MS', async () => {
    const provider = await IdentityProvider.start([await makeKey('only')]);
    try {
      const app = api.appWith(provider.env({ OIDC_JWKS_CACHE_MAX_AGE_MS: '1000' }));
      const token = await provider.sign();
      expect((await list(app, token)).status).toBe(200);
      expect((await list(app, token)).status).toBe(200);
      expect(provider.fetches).toBe(1);
      await sleep(1_100); // a sleep: the set must age past its max age (wall-clock time)
      expect((await list(app, token)).status).toBe(200);
      expect(provider.fetches).toBe(2);
    } finally {
      await provider.stop();
    }
  });
});

describe('a JWKS that cannot be fetched', () => {
  it('answers 503 with Retry-After when the connection is refused, and lets nothing in', async () => {
    const provider = await IdentityProvider.start();
    const token = await provider.sign();
    await provider.stop();
    const app = api.appWith(provider.env());
    const before = await refusalCount('jwks_unavailable');
    expectUnavailable(await list(app, token), 'connection refused');
    expect(await refusalCount('jwks_unavailable')).toBe(before + 1);
    // What needs no key is still refused as it is; static tokens still work.
    expectRefused(await list(app, 'bm9wZQ.bm9wZQ.bm9wZQ'), 'malformed');
    expectRefused(await list(app, none()), 'algorithm_not_allowed');
    expect((await list(app, api.tenantA.token)).status).toBe(200);
  });

  it('answers 503 when the JWKS answers 5xx, and when it does not answer in time', async () => {
    const provider = await IdentityProvider.start();
    try {
      const token = await provider.sign();
      provider.mode = 'error-503';
      expectUnavailable(await list(api.appWith(provider.env()), token), 'JWKS 503');
      provider.mode = 'hang';
      const app = api.appWith(provider.env({ OIDC_JWKS_TIMEOUT_MS: '300' }));
      expectUnavailable(await list(app, token), 'JWKS timeout');
    } finally {
      await provider.stop();
    }
  });

  it('keeps verifying known keys from the cached set, and answers 503 for a kid it must fetch', async () => {
    const provider = await IdentityProvider.start();
    try {
      const app = api.appWith(provider.env({ OIDC_JWKS_COOLDOWN_MS: '0' }));
      const token = await provider.sign();
      expect((await list(app, token)).status).toBe(200);
      provider.mode = 'error-503';
      expect((await list(app, token)).status, 'cached key').toBe(200);
      const newKey = await makeKey('new');
      expectUnavailable(await list(app, await provider.sign({}, { key: newKey })), 'new kid');
    } finally {
      await provider.stop();
    }
  });

  it('answers 503, not 200, once the cached set is older than its max age', async () => {
    const provider = await IdentityProvider.start();
    try {
      const app = api.appWith(provider.env({ OIDC_JWKS_CACHE_MAX_AGE_MS: '1000' }));
      const token = await provider.sign();
      expect((await list(app, token)).status).toBe(200);
      provider.mode = 'error-503';
      await sleep(1_100); // a sleep: the set must age past its max age (wall-clock time)
      expectUnavailable(await list(app, token), 'stale set');
    } finally {
      await provider.stop();
    }
  });
});

describe('random and garbled tokens (property)', () => {
  const tokenChar = fc.constantFrom(
    ...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.=+/~!$%&*:;@'.split(''),
  );
  const header = fc.record(
    {
      alg: fc.oneof(fc.constantFrom('RS256', 'ES256', 'PS256', 'HS256', 'none', ''), fc.string()),
      kid: fc.oneof(fc.constantFrom('rsa-1', 'ec-1', 'rogue'), fc.string(), fc.integer()),
      typ: fc.constantFrom('JWT', 'at+jwt'),
      crit: fc.array(fc.string(), { maxLength: 2 }),
      b64: fc.boolean(),
    },
    { requiredKeys: [] },
  );
  /** A JWT whose header names a published key: it needs the key set to be refused. */
  const needsKey = fc
    .tuple(
      fc.constantFrom({ alg: 'RS256', kid: 'rsa-1' }, { alg: 'ES256', kid: 'ec-1' }),
      fc.jsonValue(),
      fc.uint8Array({ maxLength: 300 }),
    )
    .map(
      ([h, payload, signature]) =>
        `${b64(h)}.${b64(payload)}.${Buffer.from(signature).toString('base64url')}`,
    );
  const randomToken = fc.oneof(
    needsKey,
    fc.string({ unit: tokenChar, minLength: 1, maxLength: 200 }),
    fc
      .tuple(header, fc.jsonValue(), fc.uint8Array({ maxLength: 300 }))
      .map(
        ([h, payload, signature]) =>
          `${b64(h)}.${b64(payload)}.${Buffer.from(signature).toString('base64url')}`,
      ),
    fc
      .tuple(fc.uint8Array(), fc.uint8Array(), fc.uint8Array())
      .map((parts) => parts.map((part) => Buffer.from(part).toString('base64url')).join('.')),
  );

  /** A valid token with one change: a character replaced, a segment dropped or swapped, cut. */
  const garbled = (valid: string[]) =>
    fc
      .tuple(
        fc.nat({ max: valid.length - 1 }),
        fc.constantFrom('replace', 'drop', 'swap', 'cut', 'append'),
        fc.nat(),
        tokenChar,
        fc.nat({ max: 2 }),
      )
      .map(([which, how, at, char, segment]) => {
        const token = valid[which]!;
        const parts = token.split('.');
        switch (how) {
          case 'replace': {
            const index = at % token.length;
            return token.slice(0, index) + char + token.slice(index + 1);
          }
          case 'drop':
            return parts.filter((_, i) => i !== segment).join('.');
          case 'swap': {
            const other = valid[(which + 1) % valid.length]!.split('.');
            parts[segment] = other[segment]!;
            return parts.join('.');
          }
          case 'cut':
            return token.slice(0, at % token.length);
          default:
            return `${token}${char}`;
        }
      })
      .filter((token) => {
        // A change that decodes to the same bytes (base64url's spare bits) is the same token.
        return !valid.some((original) => sameBytes(original, token));
      });

  it('never lets one in and never answers 5xx while the JWKS answers', async () => {
    const valid = [
      await idp.sign({ tenant: 'fuzz-a' }),
      await idp.sign({ tenant: 'fuzz-b' }, { key: idp.published[1] }),
      await idp.sign({ tenant: 'fuzz-c', aud: [TEST_AUDIENCE, 'x'] }),
    ];
    for (const token of valid) expect((await list(api.app, token)).status).toBe(200);
    await fc.assert(
      fc.asyncProperty(fc.oneof(randomToken, garbled(valid)), async (token) => {
        const response = await list(api.app, token);
        expect(response.status, `${token}: ${response.text}`).toBe(401);
        expect(response.body.error.code).toBe('unauthenticated');
        expect(Object.keys(AUTH_REFUSALS)).toContain(response.body.error.details.reason);
      }),
      { numRuns: 300 },
    );
  });

  it('never lets one in while the JWKS cannot be fetched: 401, or 503 when a key was needed', async () => {
    const provider = await IdentityProvider.start();
    await provider.stop();
    const app = api.appWith(provider.env());
    const seen = new Set<number>();
    await fc.assert(
      fc.asyncProperty(randomToken, async (token) => {
        const response = await list(app, token);
        expect([401, 503], `${token}: ${response.text}`).toContain(response.status);
        seen.add(response.status);
      }),
      { numRuns: 200 },
    );
    expect([...seen].sort(), 'both outcomes were exercised').toEqual([401, 503]);
  });
});

function none(): string {
  return `${b64({ alg: 'none' })}.${b64({ iss: TEST_ISSUER, aud: TEST_AUDIENCE, tenant: 'acme', exp: 9e9 })}.`;
}

function sameBytes(a: string, b: string): boolean {
  const left = a.split('.');
  const right = b.split('.');
  if (left.length !== right.length) return false;
  return left.every(
    (part, i) =>
      /^[A-Za-z0-9_-]*$/.test(right[i]!) &&
      Buffer.from(part, 'base64url').equals(Buffer.from(right[i]!, 'base64url')),
  );
}

class LogCapture extends Writable {
  text = '';
  lines: Array<Record<string, unknown>> = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    this.text += chunk.toString();
    for (const line of chunk.toString().split('\n')) {
      if (line.trim()) this.lines.push(JSON.parse(line) as Record<string, unknown>);
    }
    done();
  }
}
