/**
 * A counting gRPC proxy in front of the run's dev server: a client connected to it reaches
 * Temporal unchanged (every HTTP/2 stream forwarded with its headers, data and trailers), and
 * the proxy counts what it forwarded by gRPC method, so a suite can say how many requests of
 * one process reached the server (e.g. `DescribeWorkflowExecution`), whatever other suites
 * send to the same server. With `tls`, it serves TLS itself (asking for, not requiring, a client
 * certificate) and records the headers and the client certificate each call came with, so a
 * suite can see what a client sends on the wire (`authorization`) and which certificate it shows.
 */
import http2 from 'node:http2';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';

/** A running proxy. */
export interface GrpcCounter {
  /** `127.0.0.1:port`, for `Connection.connect({ address })`. */
  address: string;
  /** Requests forwarded so far, by method name (`DescribeWorkflowExecution`). */
  count(method: string): number;
  /** The request headers of the last call of `method` (lower-case names), if any. */
  lastHeaders(method: string): http2.IncomingHttpHeaders | undefined;
  /**
   * The subject CN of the client certificate the last call of `method` came over (TLS only);
   * undefined when the client showed none.
   */
  lastClientCertificate(method: string): string | undefined;
  /** Closes every client connection (GOAWAY), so clients connect again for their next call. */
  dropConnections(): void;
  close(): Promise<void>;
}

/** Options of {@link startGrpcCounter}. */
export interface GrpcCounterOptions {
  /** Serve TLS with this certificate and key (PEM files) instead of plaintext. */
  tls?: { certPath: string; keyPath: string };
}

const HOP_BY_HOP = new Set([':method', ':path', ':scheme', ':authority', ':status']);

/** Starts a proxy to `upstream` (`host:port`, plaintext HTTP/2). */
export async function startGrpcCounter(
  upstream: string,
  options: GrpcCounterOptions = {},
): Promise<GrpcCounter> {
  const counts = new Map<string, number>();
  const headersSeen = new Map<string, http2.IncomingHttpHeaders>();
  const certificatesSeen = new Map<string, string | undefined>();
  const sessions = new Set<http2.ServerHttp2Session>();
  const session = http2.connect(`http://${upstream}`);
  session.on('error', () => undefined);
  const server = options.tls
    ? http2.createSecureServer({
        cert: readFileSync(options.tls.certPath),
        key: readFileSync(options.tls.keyPath),
        requestCert: true,
        rejectUnauthorized: false,
        allowHTTP1: false,
      })
    : http2.createServer();
  server.on('session', (downstreamSession) => {
    sessions.add(downstreamSession);
    downstreamSession.on('close', () => sessions.delete(downstreamSession));
  });
  server.on('stream', (downstream, headers) => {
    const path = String(headers[':path'] ?? '');
    const method = path.slice(path.lastIndexOf('/') + 1);
    counts.set(method, (counts.get(method) ?? 0) + 1);
    headersSeen.set(method, headers);
    if (options.tls) {
      const peer = (downstream.session?.socket as TLSSocket | undefined)?.getPeerCertificate();
      const cn = peer?.subject?.CN;
      certificatesSeen.set(method, Array.isArray(cn) ? cn.join(',') : cn);
    }
    const forwarded: http2.OutgoingHttpHeaders = { ':method': 'POST', ':path': path };
    for (const [key, value] of Object.entries(headers)) {
      if (!HOP_BY_HOP.has(key) && value !== undefined) forwarded[key] = value;
    }
    const up = session.request(forwarded);
    downstream.pipe(up);
    up.on('response', (responseHeaders, flags) => {
      const answer: http2.OutgoingHttpHeaders = { ':status': responseHeaders[':status'] };
      for (const [key, value] of Object.entries(responseHeaders)) {
        if (!HOP_BY_HOP.has(key) && value !== undefined) answer[key] = value;
      }
      // A trailers-only answer (a gRPC error) ends with its headers.
      if (flags & http2.constants.NGHTTP2_FLAG_END_STREAM) {
        downstream.respond(answer, { endStream: true });
        return;
      }
      downstream.respond(answer, { waitForTrailers: true });
      up.pipe(downstream);
    });
    let trailers: http2.OutgoingHttpHeaders = {};
    up.on('trailers', (received) => {
      trailers = Object.fromEntries(
        Object.entries(received).filter(([key, value]) => !key.startsWith(':') && value),
      ) as http2.OutgoingHttpHeaders;
    });
    downstream.on('wantTrailers', () => downstream.sendTrailers(trailers));
    up.on('error', () => downstream.close(http2.constants.NGHTTP2_INTERNAL_ERROR));
    downstream.on('error', () => up.close(http2.constants.NGHTTP2_CANCEL));
    downstream.on('close', () => {
      if (!up.closed) up.close(http2.constants.NGHTTP2_CANCEL);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    count: (method) => counts.get(method) ?? 0,
    lastHeaders: (method) => headersSeen.get(method),
    lastClientCertificate: (method) => certificatesSeen.get(method),
    dropConnections() {
      for (const open of sessions) open.close();
    },
    async close() {
      session.close();
      for (const open of sessions) open.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        // Streams a client left open would hold the server.
        setTimeout(resolve, 1_000).unref();
      });
    },
  };
}
