/**
 * A webhook receiver of a test's own: an HTTP server on 127.0.0.1 that records every request and
 * answers `status` (test/webhooks.test.ts, test/webhook-recover-restart.test.ts).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got. */
export interface Received {
  headers: Record<string, string>;
  body: string;
  json: {
    type: string;
    timestamp: string;
    data: { id: string; state: string; delete_cause?: string };
  };
}

/** A webhook receiver on 127.0.0.1: records what it gets, answers `status` (default 204). */
export class Receiver {
  readonly received: Received[] = [];
  status = 204;
  private server?: Server;
  constructor(public port = 0) {}

  async start(): Promise<this> {
    this.server = createServer((req: IncomingMessage, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (chunk: Buffer) => chunks.push(chunk));
      req.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        const headers = Object.fromEntries(
          Object.entries(req.headers).map(([name, value]) => [name, String(value)]),
        );
        this.received.push({ headers, body, json: JSON.parse(body) as Received['json'] });
        res.writeHead(this.status).end();
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(this.port, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
    return this;
  }

  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  forSandbox(sandboxId: string): Received[] {
    return this.received.filter((r) => r.json.data.id === sandboxId);
  }

  async stop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
    this.server = undefined;
  }
}
