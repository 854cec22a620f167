/**
 * What the tenants' (src/api/auth.ts) and the operators' (src/api/operator-auth.ts) credentials share:
 * reading the bearer token of a request, matching it against a table of static tokens in
 * constant time, and refusing it the same way (src/api/auth-refusals.ts).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';
import type { Logger } from 'pino';
import { AUTH_REFUSALS, challenge, type AuthRefusalReason } from './auth-refusals.js';
import { ApiError } from './errors.js';
import { authRefusals } from './metrics.js';

/**
 * The token of an `Authorization: Bearer <token>` header (RFC 6750 section 2.1; the scheme is
 * case-insensitive), or undefined when the header is missing or of another shape.
 */
export function bearerToken(req: Request): string | undefined {
  const match = /^Bearer +(\S+) *$/i.exec(req.get('authorization') ?? '');
  return match ? match[1] : undefined;
}

function digest(token: string): Buffer {
  return createHash('sha256').update(token, 'utf8').digest();
}

/**
 * A lookup of static tokens: token -> the name it stands for (a tenant, an operator).
 * Compares in constant time over SHA-256 digests, against every token without stopping at the
 * first match, so neither a token's content nor its length leaks through timing.
 * @param tokens token -> name
 * @returns the name of `presented`, or undefined when it is none of `tokens`
 */
export function staticTokenTable(
  tokens: ReadonlyMap<string, string>,
): (presented: string) => string | undefined {
  const known = [...tokens].map(([token, name]) => ({ digest: digest(token), name }));
  return (presented) => {
    const asked = digest(presented);
    let name: string | undefined;
    for (const entry of known) {
      if (timingSafeEqual(asked, entry.digest)) name = entry.name;
    }
    return name;
  };
}

/**
 * Refuses one request's credential: counts it by reason
 * (`durable_sandbox_auth_refusals_total`), logs `authentication refused` once at info with
 * `reason` and `log` (never the token), sets the RFC 6750 `WWW-Authenticate` challenge.
 * @returns the 401 `unauthenticated` ApiError to pass to `next`, `details.reason` = `reason`
 */
export function refuseCredential(
  res: Response,
  logger: Logger,
  reason: AuthRefusalReason,
  log: Record<string, unknown> = {},
): ApiError {
  authRefusals().inc({ reason });
  logger.info({ reason, ...log }, 'authentication refused');
  res.set('WWW-Authenticate', challenge(reason));
  return new ApiError('unauthenticated', AUTH_REFUSALS[reason].message, { reason });
}
