/**
 * A loopback TCP proxy: the production topology's load balancer in front of the API replicas
 * (round robin; a target that refuses the connection is skipped, as a load balancer's health
 * check would), and the link between one worker and kube-apiserver that the fault matrix cuts.
 * Bytes pass through untouched (TLS stays end to end).
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** A running proxy. */
export interface TcpProxy {
  /** The loopback port it listens on. */
  port: number;
  /**
   * Cuts the link: open connections are reset and new ones are accepted and reset at once,
   * as when a network path fails. Until {@link TcpProxy.restore}.
   */
  cut(): void;
  restore(): void;
  /** Closes the listener and every connection. */
  close(): Promise<void>;
}

/**
 * Starts a proxy to `targets` (loopback ports), round robin. The array is read at each
 * connection, so a caller may change its entries (a replica that moved to another port).
 * @param port the port to listen on (default: a free one)
 */
export async function startTcpProxy(targets: number[], port = 0): Promise<TcpProxy> {
  const open = new Set<Socket>();
  let next = 0;
  let cut = false;
  const server: Server = createServer((client) => {
    open.add(client);
    client.on('close', () => open.delete(client));
    client.on('error', () => client.destroy());
    if (cut) {
      client.resetAndDestroy();
      return;
    }
    client.pause();
    const tryTarget = (attempt: number) => {
      const target = targets[(next + attempt) % targets.length]!;
      const upstream = connect(target, '127.0.0.1');
      upstream.once('connect', () => {
        next = (next + attempt + 1) % targets.length;
        open.add(upstream);
        upstream.on('close', () => open.delete(upstream));
        client.pipe(upstream);
        upstream.pipe(client);
        client.resume();
        upstream.on('error', () => client.destroy());
        client.on('close', () => upstream.destroy());
        upstream.on('close', () => client.destroy());
      });
      upstream.once('error', () => {
        if (upstream.readyState !== 'open' && attempt + 1 < targets.length) tryTarget(attempt + 1);
        else client.destroy();
      });
    };
    tryTarget(0);
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    cut() {
      cut = true;
      for (const socket of open) socket.resetAndDestroy();
    },
    restore() {
      cut = false;
    },
    async close() {
      for (const socket of open) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
