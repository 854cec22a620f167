/**
 * Bearer-token authentication (docs/security.md): `Authorization: Bearer <token>`, where the
 * token is one of API_TOKENS (each belonging to one tenant) or, with OIDC on, a JWT of the
 * identity provider whose tenant claim names the tenant. Static tokens are compared first, in
 * constant time over SHA-256 digests (neither a token's content nor its length leaks through
 * timing); a token that matches none and has the shape of a JWT goes to the verifier.
 *
 * Every refusal answers 401 `unauthenticated` with `details.reason` (src/api/auth-refusals.ts) and
 * the RFC 6750 challenge, is counted by reason and logged once (never the token). A JWT whose key
 * set cannot be fetched answers 503 `unavailable` with `Retry-After`: it is never let in.
 */
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import type { OidcConfig } from '../config/oidc.js';
import { JWKS_RETRY_AFTER_S, JWKS_UNAVAILABLE, type AuthRefusalReason } from './auth-refusals.js';
import { ApiError } from './errors.js';
import { createJwtVerifier, JwksUnavailableError, looksLikeJwt } from './jwt-verifier.js';
import { authRefusals } from './metrics.js';
import { bearerToken, refuseCredential, staticTokenTable } from './bearer-credentials.js';

/** What {@link bearerAuth} checks tokens against. */
export interface BearerAuthOptions {
  /** token -> tenant id (`config.apiTokens`); may be empty. */
  tokens: ReadonlyMap<string, string>;
  /** JWT verification (`config.oidc`); unset: JWTs are checked as static tokens only. */
  oidc?: OidcConfig;
  /** Where refusals are logged (one line each, with the request id). */
  logger: Logger;
}

/**
 * Middleware that resolves the request's tenant and stores it for {@link tenantOf}.
 * Answers 401 `unauthenticated` (`details.reason` one of src/api/auth-refusals.ts) when the header
 * is missing or the token is refused; 503 `unavailable` (`details.reason` `jwks_unavailable`,
 * `Retry-After`) when a JWT could not be checked because the key set could not be fetched.
 */
export function bearerAuth({ tokens, oidc, logger }: BearerAuthOptions): RequestHandler {
  const staticTenant = staticTokenTable(tokens);
  const verifier = oidc ? createJwtVerifier(oidc) : undefined;
  const refusals = authRefusals();
  const refuse = (res: Response, reason: AuthRefusalReason, log: Record<string, unknown> = {}) =>
    refuseCredential(res, logger, reason, log);

  return (req, res, next) => {
    const token = bearerToken(req);
    if (token === undefined) {
      next(refuse(res, 'missing_token'));
      return;
    }
    const tenant = staticTenant(token);
    if (tenant !== undefined) {
      res.locals.tenant = tenant;
      next();
      return;
    }
    if (!verifier || !looksLikeJwt(token)) {
      next(refuse(res, 'unknown_token', { credential: 'static' }));
      return;
    }
    verifier.verify(token).then(
      (outcome) => {
        if ('tenant' in outcome) {
          res.locals.tenant = outcome.tenant;
          next();
          return;
        }
        next(refuse(res, outcome.refused, { credential: 'jwt', detail: outcome.detail }));
      },
      (err: unknown) => {
        if (!(err instanceof JwksUnavailableError)) {
          next(err);
          return;
        }
        refusals.inc({ reason: JWKS_UNAVAILABLE });
        logger.warn(
          { reason: JWKS_UNAVAILABLE, credential: 'jwt', err: err.cause },
          'authentication unavailable: the JWKS could not be fetched',
        );
        next(
          new ApiError(
            'unavailable',
            "the identity provider's key set cannot be fetched; the token could not be checked",
            { reason: JWKS_UNAVAILABLE },
            { headers: { 'Retry-After': String(JWKS_RETRY_AFTER_S) } },
          ),
        );
      },
    );
  };
}

/**
 * The authenticated tenant of the request.
 * @throws Error when {@link bearerAuth} did not run for this request (a wiring bug -> 500)
 */
export function tenantOf(res: Response): string {
  const tenant: unknown = res.locals.tenant;
  if (typeof tenant !== 'string') throw new Error('tenantOf called on an unauthenticated route');
  return tenant;
}
