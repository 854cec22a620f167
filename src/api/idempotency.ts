/**
 * `Idempotency-Key` support (docs/api.md): the key as sent, and a hash of the request
 * that identifies "the same body" independently of key order and whitespace.
 */
import { createHash } from 'node:crypto';
import { ApiError } from './errors.js';

/** Longest accepted `Idempotency-Key`, in characters. */
export const MAX_IDEMPOTENCY_KEY_LENGTH = 255;

/** JSON with object keys sorted at every level: equal values give equal text. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.keys(value)
      .sort()
      .map(
        (key) => `${JSON.stringify(key)}:${canonicalJson((value as Record<string, unknown>)[key])}`,
      );
    return `{${entries.join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/**
 * SHA-256 (hex) of the route and the canonical JSON of a request body: the same key sent to the
 * other create route is a different request (its deadline differs), so it conflicts.
 */
export function requestHash(body: unknown, route: 'async' | 'sync' | 'nexus'): string {
  return createHash('sha256')
    .update(`${route}\n${canonicalJson(body)}`, 'utf8')
    .digest('hex');
}

/**
 * The request's `Idempotency-Key`, or undefined when absent.
 * @throws ApiError `invalid_request` when it is empty, longer than 255 characters or not
 *   printable ASCII
 */
export function idempotencyKeyOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  if (!/^[\x21-\x7e]{1,255}$/.test(header)) {
    throw new ApiError(
      'invalid_request',
      `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY_LENGTH} printable ASCII characters`,
    );
  }
  return header;
}
