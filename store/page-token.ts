/**
 * The opaque page token of listSandboxes: the (created_at, id) of the last sandbox of a page,
 * as base64url JSON. Callers must not build or parse it.
 */

/** Where the next page starts: strictly after this sandbox in newest-first order. */
export interface PageCursor {
  createdAt: string;
  id: string;
}

/** Thrown when a page token was not produced by listSandboxes. The API answers 400. */
export class InvalidPageTokenError extends Error {
  readonly code = 'invalid_request';

  constructor() {
    super('page_token is not a token this service issued');
    this.name = 'InvalidPageTokenError';
  }
}

/** Encodes a cursor as an opaque token. */
export function encodePageToken(cursor: PageCursor): string {
  return Buffer.from(JSON.stringify([cursor.createdAt, cursor.id]), 'utf8').toString('base64url');
}

/**
 * Decodes a token made by {@link encodePageToken}.
 * @throws InvalidPageTokenError for anything else
 */
export function decodePageToken(token: string): PageCursor {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, 'base64url').toString('utf8'));
  } catch {
    throw new InvalidPageTokenError();
  }
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 2 ||
    typeof parsed[0] !== 'string' ||
    typeof parsed[1] !== 'string'
  ) {
    throw new InvalidPageTokenError();
  }
  return { createdAt: parsed[0], id: parsed[1] };
}
