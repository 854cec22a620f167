/**
 * Whether a store error means the database cannot be reached right now (it is restarting, shut
 * down, or refusing connections), as opposed to a bug or bad data: the API answers the first
 * 503 `unavailable` with `Retry-After` (src/api/errors.ts), something a client can act on.
 *
 * PostgreSQL's SQLSTATE classes (PostgreSQL docs, Appendix A "Error Codes"): class 08
 * (connection exception), 57P01 admin_shutdown, 57P02 crash_shutdown, 57P03
 * cannot_connect_now, 53300 too_many_connections; node-postgres's own connection errors
 * ("Connection terminated ..."); and the socket errors of a server that is gone.
 */
const SQLSTATES = new Set(['57P01', '57P02', '57P03', '53300']);
const SOCKET_ERRORS = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'ENOTFOUND']);

/** True for an error of a store whose database is unreachable (see the file's header). */
export function isStoreUnavailable(err: unknown): boolean {
  for (let cause = err, depth = 0; cause && depth < 5; depth += 1) {
    const { code, message } = cause as { code?: unknown; message?: unknown };
    if (typeof code === 'string' && (code.startsWith('08') || SQLSTATES.has(code))) return true;
    if (typeof code === 'string' && SOCKET_ERRORS.has(code)) return true;
    if (
      typeof message === 'string' &&
      /^Connection terminated|timeout exceeded when trying to connect/.test(message)
    ) {
      return true;
    }
    if (cause instanceof AggregateError && cause.errors.some(isStoreUnavailable)) return true;
    cause = (cause as { cause?: unknown }).cause;
  }
  return false;
}
