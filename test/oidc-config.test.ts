/**
 * The OIDC variables (src/config/oidc.ts, docs/security.md): off unless OIDC_ISSUER is set, the
 * defaults, and a ConfigError naming the variable for each missing or invalid value.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AUTH_REFUSALS } from '../src/api/auth-refusals.js';
import { ConfigError, DEV_TOKEN, loadConfig } from '../src/config/index.js';
import { OIDC_VARIABLES } from '../src/config/oidc.js';

const ON = {
  OIDC_ISSUER: 'https://idp.example.com/realms/sandbox',
  OIDC_AUDIENCE: 'durable-sandbox',
  OIDC_JWKS_URL: 'https://idp.example.com/realms/sandbox/protocol/openid-connect/certs',
  OIDC_TENANT_CLAIM: 'tenant',
};

function configError(env: Record<string, string>): ConfigError {
  try {
    loadConfig(env);
  } catch (err) {
    if (err instanceof ConfigError) return err;
    throw err;
  }
  throw new Error(`loadConfig accepted ${JSON.stringify(env)}`);
}

describe('OIDC configuration', () => {
  it('is off without OIDC_ISSUER, and the dev token stays the default', () => {
    const config = loadConfig({});
    expect(config.oidc).toBeUndefined();
    expect(config.devToken).toBe(true);
    expect([...config.apiTokens.keys()]).toEqual([DEV_TOKEN]);
  });

  it('has the documented defaults when on, and no dev token without API_TOKENS', () => {
    const config = loadConfig(ON);
    expect(config.oidc).toEqual({
      issuer: ON.OIDC_ISSUER,
      audiences: ['durable-sandbox'],
      jwksUrl: new URL(ON.OIDC_JWKS_URL),
      algorithms: ['RS256', 'ES256'],
      clockToleranceMs: 30_000,
      tenantClaim: 'tenant',
      jwksCacheMaxAgeMs: 600_000,
      jwksCooldownMs: 30_000,
      jwksTimeoutMs: 5_000,
    });
    expect(config.devToken).toBe(false);
    expect(config.apiTokens.size).toBe(0);
  });

  it('keeps API_TOKENS beside OIDC, and reads lists and durations', () => {
    const config = loadConfig({
      ...ON,
      API_TOKENS: 'acme:s3cret',
      OIDC_AUDIENCE: 'api-1, api-2',
      OIDC_ALGORITHMS: 'ES384,EdDSA',
      OIDC_CLOCK_TOLERANCE_MS: '0',
      OIDC_JWKS_URL: 'http://127.0.0.1:8081/jwks',
    });
    expect(config.apiTokens.get('s3cret')).toBe('acme');
    expect(config.oidc).toMatchObject({
      audiences: ['api-1', 'api-2'],
      algorithms: ['ES384', 'EdDSA'],
      clockToleranceMs: 0,
      jwksUrl: new URL('http://127.0.0.1:8081/jwks'),
    });
  });

  const invalid: Array<[string, Record<string, string>, string, string]> = [
    ['no audience', { OIDC_AUDIENCE: '' }, 'OIDC_AUDIENCE', 'is required when OIDC_ISSUER is set'],
    ['no JWKS URL', { OIDC_JWKS_URL: ' ' }, 'OIDC_JWKS_URL', 'is required'],
    ['no tenant claim', { OIDC_TENANT_CLAIM: '' }, 'OIDC_TENANT_CLAIM', 'is required'],
    ['an empty audience', { OIDC_AUDIENCE: 'a,,b' }, 'OIDC_AUDIENCE', 'non-empty'],
    ['a JWKS URL that is no URL', { OIDC_JWKS_URL: 'idp/jwks' }, 'OIDC_JWKS_URL', 'not a URL'],
    [
      'a plain-http JWKS on another host',
      { OIDC_JWKS_URL: 'http://idp.example.com/jwks' },
      'OIDC_JWKS_URL',
      'https://',
    ],
    ['HS256', { OIDC_ALGORITHMS: 'RS256,HS256' }, 'OIDC_ALGORITHMS', '"HS256" is not one of'],
    ['none', { OIDC_ALGORITHMS: 'none' }, 'OIDC_ALGORITHMS', '"none" is not one of'],
    [
      'a tolerance in seconds',
      { OIDC_CLOCK_TOLERANCE_MS: '30s' },
      'OIDC_CLOCK_TOLERANCE_MS',
      '(ms)',
    ],
    [
      'a tolerance over 5 min',
      { OIDC_CLOCK_TOLERANCE_MS: '300001' },
      'OIDC_CLOCK_TOLERANCE_MS',
      'to 300000',
    ],
    ['a zero fetch timeout', { OIDC_JWKS_TIMEOUT_MS: '0' }, 'OIDC_JWKS_TIMEOUT_MS', 'from 100'],
  ];
  for (const [what, change, variable, message] of invalid) {
    it(`stops at start naming ${variable} for ${what}`, () => {
      const err = configError({ ...ON, ...change });
      expect(err.variable).toBe(variable);
      expect(err.message).toContain(`${variable}: `);
      expect(err.message).toContain(message);
    });
  }

  it('refuses OIDC variables without OIDC_ISSUER rather than ignoring them', () => {
    const err = configError({ OIDC_AUDIENCE: 'durable-sandbox' });
    expect(err.message).toBe('OIDC_AUDIENCE: is set but OIDC_ISSUER is not');
  });
});

describe('docs/security.md', () => {
  const doc = readFileSync(new URL('../docs/security.md', import.meta.url), 'utf8');
  /** The first cells of the table rows whose first cell is code. */
  const firstCells = [...doc.matchAll(/^\| `([^`]+)` +\|/gm)].map((match) => match[1]);

  it('lists every OIDC variable, and no other', () => {
    const variables = firstCells.filter((cell) => cell!.startsWith('OIDC_'));
    expect(variables.sort()).toEqual([...OIDC_VARIABLES].sort());
  });

  it('lists every refusal reason with the message the API sends', () => {
    const rows = [...doc.matchAll(/^\| `([a-z_]+)` +\| ([^|]+?) +\|/gm)];
    const documented = rows
      .filter((row) => row[1] !== 'reason')
      .map((row) => [row[1], row[2]!.replaceAll('\\<', '<')]);
    expect(Object.fromEntries(documented)).toEqual(
      Object.fromEntries(
        Object.entries(AUTH_REFUSALS).map(([reason, { message }]) => [reason, message]),
      ),
    );
  });
});
