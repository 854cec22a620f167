/**
 * `@durable-sandbox/client`: the typed TypeScript client of the durable-sandbox API (README.md
 * beside this package).
 */
export {
  DurableSandboxClient,
  newIdempotencyKey,
  type CallOptions,
  type ClientOptions,
  type CreateOptions,
  type EventQuery,
  type PageQuery,
} from './client.js';
export { DurableSandboxError, RequestAbortedError, isErrorCode } from './errors.js';
export {
  DEFAULT_RETRY_POLICY,
  isRetryable,
  retryDelayMs,
  type RepeatableRequest,
  type RetryPolicy,
} from './retry.js';
export { LONG_POLL_WAIT_S, MIN_POLL_INTERVAL_MS, pollDelayMs, type WaitOptions } from './wait.js';
export type { TraceSpan } from './debug-paths.js';
export type * from './types.js';
export type { components, operations, paths } from './schema.js';
