/**
 * The API's keep-alive timing (src/api/http-server.ts): an idle connection stays open for
 * HTTP_KEEP_ALIVE_TIMEOUT_MS (default 65 s, not Node's 5 s), so the server is not the side that
 * closes a connection a request is already on its way over. Seen by what the server did with the
 * client's one socket: kept it (the next request reuses it) or closed it.
 */
import { Agent, request, type Server } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import express from 'express';
import { afterEach, describe, expect, it } from 'vitest';
import { listenApi } from '../src/api/http-server.js';
import { DEFAULT_HTTP_KEEP_ALIVE_TIMEOUT_MS, loadConfig } from '../src/config/index.js';
import { waitUntil } from '../tools/wait-until.js';

const servers: Server[] = [];
afterEach(async () => {
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
});

async function serve(
  keepAliveTimeoutMs: number,
): Promise<{ port: number; sockets: () => number; closed: () => number }> {
  const app = express();
  app.get('/', (_req, res) => {
    res.json({ ok: true });
  });
  const server = await listenApi(app, { port: 0, host: '127.0.0.1', keepAliveTimeoutMs });
  servers.push(server);
  let accepted = 0;
  let closed = 0;
  server.on('connection', (socket: Socket) => {
    accepted += 1;
    socket.on('close', () => (closed += 1));
  });
  return {
    port: (server.address() as AddressInfo).port,
    sockets: () => accepted,
    closed: () => closed,
  };
}

/** One GET over `agent`: its status, whether it reused a socket, and the Keep-Alive header. */
function get(port: number, agent: Agent) {
  return new Promise<{ status: number; reused: boolean; keepAlive?: string }>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/', agent }, (res) => {
      res.resume();
      res.on('end', () =>
        resolve({
          status: res.statusCode ?? 0,
          reused: req.reusedSocket,
          keepAlive: res.headers['keep-alive'] as string | undefined,
        }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('the API server’s keep-alive', () => {
  it('defaults to 65 s, above a load balancer’s 60 s idle timeout', () => {
    const config = loadConfig({});
    expect(config.httpKeepAliveTimeoutMs).toBe(65_000);
    expect(DEFAULT_HTTP_KEEP_ALIVE_TIMEOUT_MS).toBe(65_000);
    expect(loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '620000' }).httpKeepAliveTimeoutMs).toBe(
      620_000,
    );
    expect(() => loadConfig({ HTTP_KEEP_ALIVE_TIMEOUT_MS: '5s' })).toThrow(
      /HTTP_KEEP_ALIVE_TIMEOUT_MS/,
    );
  });

  it('keeps an idle connection open past Node’s 5 s default, and says how long', async () => {
    const { port, sockets } = await serve(loadConfig({}).httpKeepAliveTimeoutMs);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const first = await get(port, agent);
      expect(first).toMatchObject({ status: 200, reused: false, keepAlive: 'timeout=65' });
      await sleep(6_500); // a sleep: idle past Node's 5 s default is the case under test
      const second = await get(port, agent);
      expect(second).toMatchObject({ status: 200, reused: true });
      expect(sockets()).toBe(1);
    } finally {
      agent.destroy();
    }
  }, 30_000);

  it('closes an idle connection after the configured timeout', async () => {
    const { port, sockets, closed } = await serve(1_000);
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      expect(await get(port, agent)).toMatchObject({ status: 200, keepAlive: 'timeout=1' });
      // The server closed the idle socket, and the client's agent saw it go: within 4 s, under
      // Node's 5 s default, so the configured 1 s is what closed it.
      await waitUntil(() => closed() === 1 && Object.keys(agent.freeSockets).length === 0, {
        timeoutMs: 4_000,
        what: 'the idle connection closed by the server',
      });
      expect(await get(port, agent)).toMatchObject({ status: 200, reused: false });
      expect(sockets()).toBe(2);
    } finally {
      agent.destroy();
    }
  }, 30_000);
});
