/**
 * Verifies JWT bearer tokens with jose against the identity provider's JWKS (docs/security.md):
 * signature by the key the `kid` names, `iss`, `aud`, `exp` (required) and `nbf` with the clock
 * tolerance, the allowed algorithms, and the tenant from the configured claim. The key set is
 * jose's `createRemoteJWKSet`: fetched on first use, reused for `jwksCacheMaxAgeMs`, and fetched
 * again when a token names an unknown `kid`, at most once per `jwksCooldownMs`.
 */
import {
  createRemoteJWKSet,
  errors,
  jwtVerify,
  type JWTHeaderParameters,
  type FlattenedJWSInput,
} from 'jose';
import type { OidcConfig } from '../config/oidc.js';
import { TENANT_ID_PATTERN } from '../config/index.js';
import type { AuthRefusalReason } from './auth-refusals.js';

/** What a verification decided: a tenant, or a refusal reason. */
export type JwtOutcome =
  { tenant: string } | { refused: AuthRefusalReason; detail: string; kid?: string };

/**
 * The key set could not be fetched (refused, timed out, not 200, not a key set): the token was
 * neither accepted nor refused. Carries the fetch error as `cause`.
 */
export class JwksUnavailableError extends Error {
  constructor(cause: unknown) {
    super(`the JWKS could not be fetched: ${(cause as Error)?.message ?? String(cause)}`, {
      cause,
    });
    this.name = 'JwksUnavailableError';
  }
}

/** Three base64url segments (the last may be empty): the compact JWS form (RFC 7515 section 7.1). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Whether a bearer token has the shape of a JWT, and so goes to the verifier. */
export function looksLikeJwt(token: string): boolean {
  return COMPACT_JWS.test(token);
}

/** jose claim failures (`JWTClaimValidationFailed.claim`) -> reason, when the value is wrong. */
const CLAIM_REFUSALS: Record<string, AuthRefusalReason> = {
  iss: 'wrong_issuer',
  aud: 'wrong_audience',
  nbf: 'not_yet_valid',
  exp: 'expired',
};

/** jose error codes -> reason; anything else about the token is `malformed`. */
const ERROR_REFUSALS: Record<string, AuthRefusalReason> = {
  [errors.JWTExpired.code]: 'expired',
  [errors.JWKSNoMatchingKey.code]: 'unknown_key',
  [errors.JWKSMultipleMatchingKeys.code]: 'unknown_key',
  [errors.JWSSignatureVerificationFailed.code]: 'bad_signature',
  [errors.JOSEAlgNotAllowed.code]: 'algorithm_not_allowed',
};

/** Errors of the key set's lookup that are about the token, not about fetching the set. */
const KEY_LOOKUP_REFUSALS = new Set<string>([
  errors.JWKSNoMatchingKey.code,
  errors.JWKSMultipleMatchingKeys.code,
]);

function refusalOf(err: unknown): AuthRefusalReason {
  if (err instanceof errors.JWTClaimValidationFailed) {
    // A claim of the wrong type (`"exp" claim must be a number`) or a missing exp is malformed.
    if (err.reason === 'check_failed' || (err.reason === 'missing' && err.claim !== 'exp')) {
      return CLAIM_REFUSALS[err.claim] ?? 'malformed';
    }
    return 'malformed';
  }
  if (err instanceof errors.JOSEError) return ERROR_REFUSALS[err.code] ?? 'malformed';
  return 'malformed';
}

/** A verifier of one configuration; build one per process (it owns the key set's cache). */
export interface JwtVerifier {
  /**
   * Verifies one compact JWT.
   * @returns the tenant, or the reason and jose's own detail (for the log, not the caller)
   * @throws JwksUnavailableError when the key set was needed and could not be fetched
   */
  verify(token: string): Promise<JwtOutcome>;
}

/**
 * Builds the verifier; fetches nothing until the first token.
 * @param oidc src/config/oidc.ts's settings
 */
export function createJwtVerifier(oidc: OidcConfig): JwtVerifier {
  const remote = createRemoteJWKSet(oidc.jwksUrl, {
    cacheMaxAge: oidc.jwksCacheMaxAgeMs,
    cooldownDuration: oidc.jwksCooldownMs,
    timeoutDuration: oidc.jwksTimeoutMs,
  });
  // jose's lookup fails with JWKSNoMatchingKey for a kid the set lacks (after one refetch out
  // of cooldown); any other failure comes from fetching or reading the set.
  const keyOf = async (header: JWTHeaderParameters, token: FlattenedJWSInput) => {
    try {
      return await remote(header, token);
    } catch (err) {
      if (err instanceof errors.JOSEError && KEY_LOOKUP_REFUSALS.has(err.code)) throw err;
      throw new JwksUnavailableError(err);
    }
  };
  return {
    async verify(token) {
      let payload: Record<string, unknown>;
      let kid: string | undefined;
      try {
        const verified = await jwtVerify(token, keyOf, {
          issuer: oidc.issuer,
          audience: oidc.audiences,
          algorithms: oidc.algorithms,
          clockTolerance: oidc.clockToleranceMs / 1000,
          requiredClaims: ['exp'],
        });
        payload = verified.payload;
        kid = verified.protectedHeader.kid;
      } catch (err) {
        if (err instanceof JwksUnavailableError) throw err;
        return { refused: refusalOf(err), detail: (err as Error)?.message ?? String(err) };
      }
      const tenant = payload[oidc.tenantClaim];
      if (typeof tenant !== 'string' || !TENANT_ID_PATTERN.test(tenant)) {
        return {
          refused: 'missing_tenant_claim',
          detail: `claim ${oidc.tenantClaim} is ${tenant === undefined ? 'absent' : 'not a tenant id'}`,
          kid,
        };
      }
      return { tenant };
    },
  };
}
