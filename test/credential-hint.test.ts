/**
 * The embedded stack's banner names the credential the configuration accepts (docs/security.md):
 * the dev token, API_TOKENS, the OIDC issuer's JWTs, or both.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { credentialHint } from '../tools/credential-hint.js';

const OIDC = {
  OIDC_ISSUER: 'https://idp.example.test/realms/platform',
  OIDC_AUDIENCE: 'durable-sandbox',
  OIDC_JWKS_URL: 'https://idp.example.test/realms/platform/certs',
  OIDC_TENANT_CLAIM: 'tenant',
};

describe('the banner credential', () => {
  it('names the dev token when nothing is configured', () => {
    expect(credentialHint(loadConfig({}))).toEqual({
      line: 'token: dev-token, tenant dev',
      bearer: 'dev-token',
    });
  });

  it('names JWTs of the issuer, not API_TOKENS, when only OIDC is configured', () => {
    const hint = credentialHint(loadConfig(OIDC));
    expect(hint.line).toBe(`a JWT from ${OIDC.OIDC_ISSUER} (OIDC_ISSUER)`);
    expect(hint.line).not.toContain('API_TOKENS');
    expect(hint.bearer).toBe('<a JWT>');
  });

  it('names API_TOKENS alone, and both when both are configured', () => {
    expect(credentialHint(loadConfig({ API_TOKENS: 'acme:s3cret' })).line).toBe(
      'a token from API_TOKENS',
    );
    expect(credentialHint(loadConfig({ ...OIDC, API_TOKENS: 'acme:s3cret' })).line).toBe(
      `a token from API_TOKENS, or a JWT from ${OIDC.OIDC_ISSUER} (OIDC_ISSUER)`,
    );
  });
});
