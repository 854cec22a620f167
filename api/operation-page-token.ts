/**
 * Page tokens of `GET /v1/operations`: Temporal's visibility page token wrapped with the query it
 * belongs to, base64url-encoded. A token is only accepted for the same tenant and filter, and
 * anything that is not such a token answers 400 at once (Temporal itself answers a foreign token
 * with a retryable error, which would turn into a slow 500).
 */
import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';
import { ApiError } from './errors.js';

function scopeOf(query: string): string {
  return createHash('sha256').update(query, 'utf8').digest('base64url').slice(0, 22);
}

/** Wraps Temporal's page token for the caller. */
export function encodeOperationPageToken(temporalToken: Uint8Array, query: string): string {
  const envelope = { s: scopeOf(query), t: Buffer.from(temporalToken).toString('base64url') };
  return Buffer.from(JSON.stringify(envelope), 'utf8').toString('base64url');
}

/**
 * Unwraps a token made by {@link encodeOperationPageToken} for the same visibility query.
 * @returns Temporal's page token
 * @throws ApiError `invalid_request` when the token is malformed or belongs to another query
 */
export function decodeOperationPageToken(token: string, query: string): Buffer {
  const invalid = new ApiError('invalid_request', 'page_token is not a token this service issued');
  let envelope: unknown;
  try {
    envelope = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw invalid;
  }
  const { s, t } = (envelope ?? {}) as { s?: unknown; t?: unknown };
  if (typeof s !== 'string' || typeof t !== 'string' || s !== scopeOf(query) || t === '') {
    throw invalid;
  }
  return Buffer.from(t, 'base64url');
}
