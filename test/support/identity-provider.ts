/**
 * A test identity provider: a real JWKS served over HTTP on a free port of 127.0.0.1 (node:http)
 * with keys made by jose, and tokens signed by them. The key set can rotate (add and remove
 * keys), and the endpoint can answer 5xx, hang or go away, to test the service's verifier
 * against what a real provider does. It counts the key set fetches it answered.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  exportJWK,
  generateKeyPair,
  SignJWT,
  type CryptoKey,
  type JWK,
  type JWTPayload,
} from 'jose';

/** One signing key of the provider. */
export interface ProviderKey {
  kid: string;
  alg: 'RS256' | 'ES256' | 'PS256';
  privateKey: CryptoKey;
  publicJwk: JWK;
}

/** How the JWKS endpoint answers. */
export type JwksMode = 'up' | 'error-503' | 'hang';

/** Options of {@link IdentityProvider.sign}. */
export interface SignOptions {
  /** The key to sign with (default: the first published key). */
  key?: ProviderKey;
  /** `kid` header (default the key's; null: none). */
  kid?: string | null;
  /** `alg` header (default the key's). */
  alg?: string;
  /** Seconds from now of `exp` (default 300; null: no exp). */
  expiresInS?: number | null;
  /** Seconds from now of `nbf` (default: no nbf). */
  notBeforeInS?: number;
}

export const TEST_ISSUER = 'https://idp.test.invalid/realms/sandbox';
export const TEST_AUDIENCE = 'durable-sandbox';
export const TEST_TENANT_CLAIM = 'tenant';

/** Makes one signing key with jose (RSA 2048 or P-256). */
export async function makeKey(
  kid: string,
  alg: ProviderKey['alg'] = 'RS256',
): Promise<ProviderKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const publicJwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicJwk };
}

/** A running provider; `stop()` closes it. */
export class IdentityProvider {
  /** Keys the JWKS publishes, in order. */
  published: ProviderKey[];
  mode: JwksMode = 'up';
  /** JWKS requests answered with the key set (status 200). */
  fetches = 0;
  private readonly hanging: ServerResponse[] = [];

  private constructor(
    private readonly server: Server,
    keys: ProviderKey[],
    readonly jwksUrl: string,
  ) {
    this.published = keys;
  }

  /** Starts a provider publishing `keys` (default: one RS256 and one ES256 key). */
  static async start(keys?: ProviderKey[]): Promise<IdentityProvider> {
    const initial = keys ?? [await makeKey('rsa-1', 'RS256'), await makeKey('ec-1', 'ES256')];
    const holder: { provider?: IdentityProvider } = {};
    const server = createServer((req, res) => holder.provider?.answer(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    holder.provider = new IdentityProvider(server, initial, `http://127.0.0.1:${port}/jwks`);
    return holder.provider;
  }

  /** The environment that turns OIDC on against this provider. */
  env(extra: Record<string, string> = {}): Record<string, string> {
    return {
      OIDC_ISSUER: TEST_ISSUER,
      OIDC_AUDIENCE: TEST_AUDIENCE,
      OIDC_JWKS_URL: this.jwksUrl,
      OIDC_TENANT_CLAIM: TEST_TENANT_CLAIM,
      ...extra,
    };
  }

  private answer(req: IncomingMessage, res: ServerResponse): void {
    if (req.url !== '/jwks') {
      res.writeHead(404).end();
      return;
    }
    if (this.mode === 'hang') {
      this.hanging.push(res);
      return;
    }
    if (this.mode === 'error-503') {
      res.writeHead(503, { 'content-type': 'text/plain' }).end('down for maintenance');
      return;
    }
    this.fetches += 1;
    res
      .writeHead(200, { 'content-type': 'application/json' })
      .end(JSON.stringify({ keys: this.published.map((key) => key.publicJwk) }));
  }

  /**
   * A compact JWT with `iss`, `aud`, `iat`, `exp` and the tenant claim set as the service
   * expects, overridden by `claims` (a claim set to undefined is left out).
   */
  async sign(claims: JWTPayload = {}, options: SignOptions = {}): Promise<string> {
    const key = options.key ?? this.published[0];
    if (!key) throw new Error('the provider publishes no key');
    const nowS = Math.floor(Date.now() / 1000);
    const payload: JWTPayload = {
      iss: TEST_ISSUER,
      aud: TEST_AUDIENCE,
      sub: 'user-1',
      iat: nowS,
      [TEST_TENANT_CLAIM]: 'acme',
      ...claims,
    };
    if (options.expiresInS !== null) payload.exp = nowS + (options.expiresInS ?? 300);
    if (options.notBeforeInS !== undefined) payload.nbf = nowS + options.notBeforeInS;
    for (const [name, value] of Object.entries(payload)) {
      if (value === undefined) delete payload[name];
    }
    const kid = options.kid === undefined ? key.kid : options.kid;
    return new SignJWT(payload)
      .setProtectedHeader({ alg: options.alg ?? key.alg, typ: 'JWT', ...(kid ? { kid } : {}) })
      .sign(key.privateKey);
  }

  /** Closes the endpoint: later fetches are refused (ECONNREFUSED). */
  async stop(): Promise<void> {
    for (const res of this.hanging.splice(0)) res.destroy();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
