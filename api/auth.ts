/**
 * Bearer-token authentication (docs/api.md): `Authorization: Bearer <token>`, each token
 * belonging to one tenant (`API_TOKENS`). Tokens are compared in constant time over SHA-256
 * digests, so neither a token's content nor its length leaks through timing.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import { ApiError } from './errors.js';

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * Middleware that resolves the request's tenant and stores it for {@link tenantOf}.
 * @param tokens token -> tenant id (`config.apiTokens`)
 * Answers 401 `unauthenticated` (with `WWW-Authenticate: Bearer`) when the header is missing,
 * malformed or names no known token.
 */
export function bearerAuth(tokens: ReadonlyMap<string, string>): RequestHandler {
  const known = [...tokens].map(([token, tenant]) => ({ digest: digest(token), tenant }));
  return (req, res, next) => {
    const match = /^Bearer +(\S+) *$/i.exec(req.get('authorization') ?? '');
    let tenant: string | undefined;
    if (match) {
      const presented = digest(match[1]!);
      // Compare against every token, without stopping at the first match.
      for (const entry of known) {
        if (timingSafeEqual(presented, entry.digest)) tenant = entry.tenant;
      }
    }
    if (tenant === undefined) {
      res.set('WWW-Authenticate', 'Bearer');
      next(
        new ApiError(
          'unauthenticated',
          match ? 'the bearer token is not valid' : 'send the header Authorization: Bearer <token>',
        ),
      );
      return;
    }
    res.locals.tenant = tenant;
    next();
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
