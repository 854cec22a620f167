/**
 * Why a request was not authenticated (docs/security.md, "Refusals"): one row per stable reason,
 * with the sentence the caller sees. Every 401 carries its reason in `error.details.reason` and,
 * when a token was presented, in `WWW-Authenticate: Bearer error="invalid_token",
 * error_description="..."` (RFC 6750 section 3). The messages say nothing about the token beyond
 * what its sender already knows.
 */

/** A reason's row: the message, and whether a token was presented (RFC 6750 `invalid_token`). */
interface RefusalRow {
  message: string;
  invalidToken: boolean;
}

/** Refusal reasons (401) and their messages. */
export const AUTH_REFUSALS = {
  missing_token: {
    message: 'send the header Authorization: Bearer <token>',
    invalidToken: false,
  },
  unknown_token: { message: 'the bearer token is not valid', invalidToken: true },
  malformed: {
    message: 'the token is not a well-formed signed JWT with an exp claim',
    invalidToken: true,
  },
  expired: { message: 'the token has expired', invalidToken: true },
  not_yet_valid: { message: 'the token is not valid yet (nbf)', invalidToken: true },
  wrong_issuer: { message: 'the token was issued by another issuer', invalidToken: true },
  wrong_audience: { message: 'the token is meant for another audience', invalidToken: true },
  unknown_key: {
    message: "the token's signing key (kid) is not in the identity provider's key set",
    invalidToken: true,
  },
  bad_signature: { message: "the token's signature does not verify", invalidToken: true },
  algorithm_not_allowed: {
    message: "the token's signing algorithm is not allowed",
    invalidToken: true,
  },
  missing_tenant_claim: {
    message: 'the token carries no tenant claim that is a tenant id',
    invalidToken: true,
  },
} as const satisfies Record<string, RefusalRow>;

/** A key of {@link AUTH_REFUSALS}. */
export type AuthRefusalReason = keyof typeof AUTH_REFUSALS;

/** The reason of a 503: the key set could not be fetched, so the token could not be checked. */
export const JWKS_UNAVAILABLE = 'jwks_unavailable';

/** `Retry-After` (seconds) of a 503 `jwks_unavailable`. */
export const JWKS_RETRY_AFTER_S = 5;

/**
 * The `WWW-Authenticate` value of a refusal (RFC 6750 section 3): a bare `Bearer` challenge when
 * no bearer token was sent (section 3.1 asks for no error code then), else `invalid_token` with
 * the message as `error_description`.
 */
export function challenge(reason: AuthRefusalReason): string {
  const row: RefusalRow = AUTH_REFUSALS[reason];
  if (!row.invalidToken) return 'Bearer';
  // quoted-string (RFC 9110 section 5.6.4): the messages hold no quote or backslash.
  return `Bearer error="invalid_token", error_description="${row.message}"`;
}
