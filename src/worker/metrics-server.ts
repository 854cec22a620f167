/**
 * The worker's `/metrics` endpoint: the worker's registry (create and watch metrics, see
 * src/activities/metrics.ts; the process metrics when the process is a worker) followed by the Temporal SDK's own worker metrics, which the SDK
 * Runtime exports on an internal address (src/worker/runtime.ts).
 */
import { createServer, type Server } from 'node:http';
import type { Registry } from 'prom-client';
import { workerRegistry } from '../activities/metrics.js';

/** Options of {@link startMetricsServer}. */
export interface MetricsServerOptions {
  port: number;
  /** Bind address (default 0.0.0.0, so a scraper in another container reaches it). */
  host?: string;
  /** URL of the SDK Runtime's Prometheus exporter, e.g. `http://127.0.0.1:39000/metrics`. */
  sdkMetricsUrl?: string;
  /** The registry served (default: the worker's, src/activities/metrics.ts). */
  registry?: Registry;
}

/**
 * Serves `GET /metrics` (and `GET /healthz`); other paths answer 404.
 * @returns the listening server; close it on shutdown
 * @throws the listen error (e.g. EADDRINUSE)
 */
export async function startMetricsServer(options: MetricsServerOptions): Promise<Server> {
  const server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/healthz') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
      return;
    }
    if (req.method !== 'GET' || req.url !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    const registry = options.registry ?? workerRegistry;
    void renderMetrics(registry, options.sdkMetricsUrl).then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      (err: unknown) =>
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics failed: ${String(err)}`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host ?? '0.0.0.0', () => resolve());
  });
  return server;
}

async function renderMetrics(
  registry: Registry,
  sdkMetricsUrl: string | undefined,
): Promise<string> {
  const own = await registry.metrics();
  if (!sdkMetricsUrl) return own;
  try {
    const response = await fetch(sdkMetricsUrl, { signal: AbortSignal.timeout(2_000) });
    return `${own}\n# Temporal SDK worker metrics\n${await response.text()}`;
  } catch {
    return `${own}\n# Temporal SDK worker metrics unavailable\n`;
  }
}
