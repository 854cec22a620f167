/**
 * Keeps the connection of a Kubernetes DELETE that carries a body.
 *
 * undici closes the connection after any request that sends a body with a method it does not
 * expect one for (`expectsPayload`: DELETE is not among POST, PUT, PATCH…), unless the request
 * says `reset: false` (undici 7, lib/dispatcher/client-h1.js `writeBuffer`): a server that
 * ignores such a body would read it as the start of the next request. The apiserver reads a
 * DELETE's body as its `DeleteOptions` (the pod delete's uid precondition lives there, as
 * `preconditions` has no query parameter; Kubernetes API, "DeleteOptions"), so the connection is
 * safe to keep. Without this, every pod delete opened a TCP connection of its own (and against
 * a real apiserver a TLS handshake, on both sides) and left the pool's connection behind.
 */
import type { Dispatcher } from 'undici';

/**
 * An undici interceptor (`dispatcher.compose(keepAliveAfterDeleteBody)`): a DELETE that has a
 * body and states no `reset` of its own is dispatched with `reset: false`; every other request
 * as it came.
 */
export const keepAliveAfterDeleteBody: Dispatcher.DispatcherComposeInterceptor =
  (dispatch) => (options, handler) =>
    dispatch(
      options.method === 'DELETE' && options.body != null && options.reset === undefined
        ? { ...options, reset: false }
        : options,
      handler,
    );
