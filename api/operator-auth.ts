/**
 * The operators' credential (docs/security.md, "Refusal events and learned floors"): the operator
 * routes (`/admin/v1/…`, docs/api.md "Operator routes") accept only a token of ADMIN_TOKENS, never
 * a tenant's token (API_TOKENS, which config refuses to overlap) nor a JWT. Tokens are compared
 * as api/auth.ts compares the tenants': in constant time over SHA-256 digests, against every
 * token. A refusal answers 401 `unauthenticated` with the same reasons and challenge as the
 * tenant routes (api/auth-refusals.ts), counted and logged once.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { AUTH_REFUSALS, challenge, type AuthRefusalReason } from './auth-refusals.js';
import { ApiError } from './errors.js';
import { authRefusals } from './metrics.js';

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * Middleware that lets through only a bearer token of `tokens` (token -> operator name) and
 * stores the operator's name for {@link operatorOf}.
 * Answers 401 `unauthenticated` (`details.reason` `missing_token` or `unknown_token`) otherwise.
 */
export function operatorAuth(options: {
  tokens: ReadonlyMap<string, string>;
  logger: Logger;
}): RequestHandler {
  const known = [...options.tokens].map(([token, operator]) => ({
    digest: digest(token),
    operator,
  }));
  const refuse = (res: Response, reason: AuthRefusalReason): ApiError => {
    authRefusals().inc({ reason });
    options.logger.info({ reason, credential: 'operator' }, 'authentication refused');
    res.set('WWW-Authenticate', challenge(reason));
    return new ApiError('unauthenticated', AUTH_REFUSALS[reason].message, { reason });
  };
  return (req, res, next) => {
    const match = /^Bearer +(\S+) *$/i.exec(req.get('authorization') ?? '');
    if (!match) {
      next(refuse(res, 'missing_token'));
      return;
    }
    const presented = digest(match[1]!);
    let operator: string | undefined;
    for (const entry of known) {
      if (timingSafeEqual(presented, entry.digest)) operator = entry.operator;
    }
    if (operator === undefined) {
      next(refuse(res, 'unknown_token'));
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
