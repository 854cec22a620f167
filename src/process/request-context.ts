/**
 * The HTTP request a piece of work runs for: an AsyncLocalStorage the API's first middleware
 * enters (src/api/request-id.ts), read by the logger (src/process/logger.ts) so every log line written
 * while serving a request carries its `request_id`, wherever in the code it is written.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

/** The fields every log line of a request carries. */
export interface RequestContext {
  request_id: string;
}

/** The current request, if any. */
export const requestContext = new AsyncLocalStorage<RequestContext>();

/** The fields to add to a log line: the current request's, or none outside a request. */
export function requestLogFields(): Partial<RequestContext> {
  return requestContext.getStore() ?? {};
}
