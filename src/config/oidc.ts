/**
 * The OIDC part of the configuration (docs/security.md): JWT bearer tokens verified against an
 * identity provider's JWKS. On when OIDC_ISSUER is set; then OIDC_AUDIENCE, OIDC_JWKS_URL and
 * OIDC_TENANT_CLAIM are required. There is no discovery: the key set's URL is named, so the
 * service asks the provider for nothing at start and trusts no discovery document.
 */

/** Signature algorithms a JWKS can verify (RFC 7518 section 3.1 and RFC 8037; no HS*, no none). */
export const OIDC_KNOWN_ALGORITHMS = [
  'RS256',
  'RS384',
  'RS512',
  'PS256',
  'PS384',
  'PS512',
  'ES256',
  'ES384',
  'ES512',
  'EdDSA',
  'Ed25519',
] as const;

/** One of {@link OIDC_KNOWN_ALGORITHMS}. */
export type OidcAlgorithm = (typeof OIDC_KNOWN_ALGORITHMS)[number];

/** JWT verification settings; all durations in ms. */
export interface OidcConfig {
  /** Expected `iss`, exactly (OIDC_ISSUER). */
  issuer: string;
  /** Accepted `aud` values; a token must name at least one (OIDC_AUDIENCE, comma separated). */
  audiences: string[];
  /** The provider's JSON Web Key Set (OIDC_JWKS_URL): https, or http on a loopback host. */
  jwksUrl: URL;
  /** Accepted `alg` header values (OIDC_ALGORITHMS, default RS256,ES256). */
  algorithms: OidcAlgorithm[];
  /** Leeway for `exp` and `nbf` (OIDC_CLOCK_TOLERANCE_MS, default 30000). */
  clockToleranceMs: number;
  /** Top-level claim holding the tenant id (OIDC_TENANT_CLAIM), e.g. `tenant` or `org_id`. */
  tenantClaim: string;
  /** How long a fetched key set is used before it is fetched again (default 600000). */
  jwksCacheMaxAgeMs: number;
  /**
   * Least time between two fetches caused by an unknown `kid` (default 30000): a new key is
   * picked up at most this long after the last fetch.
   */
  jwksCooldownMs: number;
  /** Time limit of one key set fetch (default 5000). */
  jwksTimeoutMs: number;
}

/** The variables {@link parseOidc} reads. */
export const OIDC_VARIABLES = [
  'OIDC_ISSUER',
  'OIDC_AUDIENCE',
  'OIDC_JWKS_URL',
  'OIDC_ALGORITHMS',
  'OIDC_CLOCK_TOLERANCE_MS',
  'OIDC_TENANT_CLAIM',
  'OIDC_JWKS_CACHE_MAX_AGE_MS',
  'OIDC_JWKS_COOLDOWN_MS',
  'OIDC_JWKS_TIMEOUT_MS',
] as const;

/** A problem with one variable; src/config/index.ts turns it into its ConfigError. */
export class OidcConfigProblem extends Error {
  constructor(
    readonly variable: (typeof OIDC_VARIABLES)[number],
    message: string,
  ) {
    super(message);
    this.name = 'OidcConfigProblem';
  }
}

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]']);

function value(env: NodeJS.ProcessEnv, name: (typeof OIDC_VARIABLES)[number]): string | undefined {
  const raw = env[name]?.trim();
  return raw ? raw : undefined;
}

function required(env: NodeJS.ProcessEnv, name: (typeof OIDC_VARIABLES)[number]): string {
  const raw = value(env, name);
  if (raw === undefined) throw new OidcConfigProblem(name, 'is required when OIDC_ISSUER is set');
  return raw;
}

function durationMs(
  env: NodeJS.ProcessEnv,
  name: (typeof OIDC_VARIABLES)[number],
  fallback: number,
  { min, max }: { min: number; max: number },
): number {
  const raw = value(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new OidcConfigProblem(
      name,
      `must be an integer from ${min} to ${max} (ms), got "${raw}"`,
    );
  }
  return Number(raw);
}

function jwksUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OidcConfigProblem('OIDC_JWKS_URL', `is not a URL: "${raw}"`);
  }
  const loopbackHttp = url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname);
  if (url.protocol !== 'https:' && !loopbackHttp) {
    throw new OidcConfigProblem(
      'OIDC_JWKS_URL',
      `must be an https:// URL (http:// only on localhost), got "${raw}"`,
    );
  }
  return url;
}

function algorithms(raw: string | undefined): OidcAlgorithm[] {
  if (raw === undefined) return ['RS256', 'ES256'];
  const names = raw.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!(OIDC_KNOWN_ALGORITHMS as readonly string[]).includes(name)) {
      throw new OidcConfigProblem(
        'OIDC_ALGORITHMS',
        `"${name}" is not one of ${OIDC_KNOWN_ALGORITHMS.join(', ')} (asymmetric only)`,
      );
    }
  }
  return [...new Set(names)] as OidcAlgorithm[];
}

/**
 * Reads the OIDC variables.
 * @returns undefined when OIDC_ISSUER is unset (JWTs are then not accepted)
 * @throws OidcConfigProblem naming the first invalid or missing variable
 */
export function parseOidc(env: NodeJS.ProcessEnv): OidcConfig | undefined {
  const issuer = value(env, 'OIDC_ISSUER');
  if (issuer === undefined) {
    const stray = OIDC_VARIABLES.find((name) => value(env, name) !== undefined);
    if (stray) throw new OidcConfigProblem(stray, 'is set but OIDC_ISSUER is not');
    return undefined;
  }
  const audiences = required(env, 'OIDC_AUDIENCE')
    .split(',')
    .map((audience) => audience.trim());
  if (audiences.some((audience) => !audience)) {
    throw new OidcConfigProblem('OIDC_AUDIENCE', 'must be comma-separated non-empty audiences');
  }
  const tenantClaim = required(env, 'OIDC_TENANT_CLAIM');
  return {
    issuer,
    audiences,
    jwksUrl: jwksUrl(required(env, 'OIDC_JWKS_URL')),
    algorithms: algorithms(value(env, 'OIDC_ALGORITHMS')),
    clockToleranceMs: durationMs(env, 'OIDC_CLOCK_TOLERANCE_MS', 30_000, { min: 0, max: 300_000 }),
    tenantClaim,
    jwksCacheMaxAgeMs: durationMs(env, 'OIDC_JWKS_CACHE_MAX_AGE_MS', 600_000, {
      min: 1_000,
      max: 86_400_000,
    }),
    jwksCooldownMs: durationMs(env, 'OIDC_JWKS_COOLDOWN_MS', 30_000, { min: 0, max: 3_600_000 }),
    jwksTimeoutMs: durationMs(env, 'OIDC_JWKS_TIMEOUT_MS', 5_000, { min: 100, max: 60_000 }),
  };
}
