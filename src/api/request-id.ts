/**
 * `X-Request-Id`: taken from the request when it is a sane token (1-128 characters of letters,
 * digits and `-._:/@`), made (a UUID) otherwise; sent back on every response, and carried by
 * every log line written while the request is served (src/process/request-context.ts).
 */
import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import { requestContext } from '../process/request-context.js';

/** The header, as proxies and load balancers name it. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

const ACCEPTED = /^[A-Za-z0-9._:/@-]{1,128}$/;

/** The first middleware: names the request and runs the rest of the chain in its context. */
export function requestId(): RequestHandler {
  return (req, res, next) => {
    const given = req.get(REQUEST_ID_HEADER);
    const id = given && ACCEPTED.test(given) ? given : randomUUID();
    res.locals.requestId = id;
    res.setHeader(REQUEST_ID_HEADER, id);
    requestContext.run({ request_id: id }, next);
  };
}
