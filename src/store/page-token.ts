/**
 * The opaque page token of the list queries: the (created_at, id) of the last row of a page, and
 * a digest of the filter the page was read with, as base64url JSON. Callers must not build or
 * parse it. A token is a position (keyset paging), not an offset, so rows written while a caller
 * pages move no row across a page boundary; and it only continues the filter it was issued for.
 */
import { createHash } from 'node:crypto';

/** Where the next page starts: strictly after this row in newest-first order. */
export interface PageCursor {
  createdAt: string;
  id: string;
}

/** The message of a token this service did not issue. */
export const FOREIGN_TOKEN = 'page_token is not a token this service issued';
/** The message of a token issued for another filter (or the other list). */
export const OTHER_FILTER_TOKEN =
  'page_token was issued for another filter: send the same filter as the request that returned ' +
  'it, or leave page_token out to start over';

/** Thrown when a page token was not issued for this list and filter. The API answers 400. */
export class InvalidPageTokenError extends Error {
  readonly code = 'invalid_request';

  constructor(message: string = FOREIGN_TOKEN) {
    super(message);
    this.name = 'InvalidPageTokenError';
  }
}

/**
 * The digest a token carries of its list and filter: 16 hex digits of SHA-256 over the canonical
 * JSON of `filter` (the caller normalizes it: sorted sets, one spelling per operator).
 * @returns undefined for the unfiltered list of sandboxes or operations (`filter` undefined):
 *   its tokens carry no digest, as the release before's do, so a rolling upgrade keeps paging
 */
export function filterDigest(filter: unknown): string | undefined {
  if (filter === undefined) return undefined;
  return createHash('sha256').update(JSON.stringify(filter), 'utf8').digest('hex').slice(0, 16);
}

/** Encodes a cursor and the digest of its filter ({@link filterDigest}) as an opaque token. */
export function encodePageToken(cursor: PageCursor, digest?: string): string {
  const parts =
    digest === undefined ? [cursor.createdAt, cursor.id] : [cursor.createdAt, cursor.id, digest];
  return Buffer.from(JSON.stringify(parts), 'utf8').toString('base64url');
}

/**
 * Decodes a token made by {@link encodePageToken} for the filter whose digest is `digest`.
 * @throws InvalidPageTokenError for anything else: a foreign token, or one issued for another
 *   filter (a token without a digest belongs to the unfiltered list)
 */
export function decodePageToken(token: string, digest?: string): PageCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidPageTokenError();
  }
  if (
    !Array.isArray(parsed) ||
    (parsed.length !== 2 && parsed.length !== 3) ||
    !parsed.every((part) => typeof part === 'string')
  ) {
    throw new InvalidPageTokenError();
  }
  const [createdAt, id, issuedFor] = parsed as string[];
  if (issuedFor !== digest) throw new InvalidPageTokenError(OTHER_FILTER_TOKEN);
  return { createdAt: createdAt as string, id: id as string };
}
