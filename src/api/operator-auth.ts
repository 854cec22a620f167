/**
 * The operators' credential (docs/security.md, "Refusal events and learned floors"): the operator
 * routes (`/admin/v1/…`, docs/api.md "Operator routes") accept only a token of ADMIN_TOKENS, never
 * a tenant's token (API_TOKENS, which config refuses to overlap) nor a JWT. Tokens are compared
 * as src/api/auth.ts compares the tenants': in constant time over SHA-256 digests, against every
 * token. A refusal answers 401 `unauthenticated` with the same reasons and challenge as the
 * tenant routes (src/api/auth-refusals.ts), counted and logged once.
 */
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { bearerToken, refuseCredential, staticTokenTable } from './bearer-credentials.js';

/**
 * Middleware that lets through only a bearer token of `tokens` (token -> operator name) and
 * stores the operator's name for {@link operatorOf}.
 * Answers 401 `unauthenticated` (`details.reason` `missing_token` or `unknown_token`) otherwise.
 */
export function operatorAuth(options: {
  tokens: ReadonlyMap<string, string>;
  logger: Logger;
}): RequestHandler {
  const operatorOfToken = staticTokenTable(options.tokens);
  return (req, res, next) => {
    const token = bearerToken(req);
    if (token === undefined) {
      next(refuseCredential(res, options.logger, 'missing_token', { credential: 'operator' }));
      return;
    }
    const operator = operatorOfToken(token);
    if (operator === undefined) {
      next(refuseCredential(res, options.logger, 'unknown_token', { credential: 'operator' }));
      return;
    }
    res.locals.operator = operator;
    next();
  };
}

/**
 * The authenticated operator of the request.
 * @throws Error when {@link operatorAuth} did not run for this request (a wiring bug -> 500)
 */
export function operatorOf(res: Response): string {
  const operator: unknown = res.locals.operator;
  if (typeof operator !== 'string')
    throw new Error('operatorOf called on a route without operatorAuth');
  return operator;
}
