/**
 * The API's HTTP server: listening, and the keep-alive timing a server behind a load balancer
 * needs.
 *
 * An idle keep-alive connection is closed by whichever side times out first. When the server
 * does, a request already on its way over that connection is lost ("socket hang up" / "other
 * side closed" at the client, a 502 at a load balancer), and the busier the server's event loop,
 * the wider that window. So the server waits longer than anything in front of it: Node's 5 s
 * default is below every common load balancer's idle timeout (AWS's Application Load Balancer:
 * 60 s; Google Cloud's external Application Load Balancer: 600 s, which needs
 * HTTP_KEEP_ALIVE_TIMEOUT_MS=620000). The server's `Keep-Alive: timeout=…` answer tells clients
 * (undici, the Node fetch) to stop reusing a connection before then.
 */
import type { Server } from 'node:http';
import type { Express } from 'express';

/** Options of {@link listenApi}. */
export interface ListenOptions {
  port: number;
  /** Default: every interface. */
  host?: string;
  /** Idle keep-alive connections are closed after this long, in ms (config httpKeepAliveTimeoutMs). */
  keepAliveTimeoutMs: number;
}

/**
 * Listens with `app` and sets the server's keep-alive timeout.
 * @returns the listening server
 * @throws the listen error (e.g. EADDRINUSE) as it is
 */
export function listenApi(app: Express, options: ListenOptions): Promise<Server> {
  return new Promise<Server>((resolve, reject) => {
    const done = (err?: Error) => (err ? reject(err) : resolve(server));
    // Express 5 hands a listen error (e.g. EADDRINUSE) to this callback, not to 'error'.
    const server =
      options.host === undefined
        ? app.listen(options.port, done)
        : app.listen(options.port, options.host, done);
    server.keepAliveTimeout = options.keepAliveTimeoutMs;
  });
}
