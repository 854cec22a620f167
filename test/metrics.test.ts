/**
 * Metrics: one refused create through the API moves the create counters on both scrape
 * endpoints (the API's /metrics and the worker's metrics server), and the worker's endpoint
 * carries the Temporal SDK's own worker metrics.
 */
import type { Server } from 'node:http';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../config/free-port.js';
import { startMetricsServer } from '../worker/metrics-server.js';
import { installRuntime } from '../worker/runtime.js';
import { startApiStack, type ApiStack } from './support/api.js';
import { until } from './support/until.js';

/** The value of one sample line `name{labels} value` in a Prometheus text scrape, 0 when absent. */
function sample(text: string, name: string, labels = ''): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const [series, value] = line.split(' ');
    if (series === `${name}${labels ? `{${labels}}` : ''}`) return Number(value);
  }
  return 0;
}

describe('metrics', () => {
  let api: ApiStack;
  let workerMetrics: Server;
  let workerMetricsUrl: string;

  beforeAll(async () => {
    // This file's process gets a Runtime with the SDK's Prometheus exporter, as the worker has.
    const sdkPort = await freePort();
    installRuntime(pino({ level: 'silent' }), { prometheusBindAddress: `127.0.0.1:${sdkPort}` });
    api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
    const port = await freePort();
    workerMetrics = await startMetricsServer({
      port,
      host: '127.0.0.1',
      sdkMetricsUrl: `http://127.0.0.1:${sdkPort}/metrics`,
    });
    workerMetricsUrl = `http://127.0.0.1:${port}/metrics`;
  });
  afterAll(async () => {
    workerMetrics?.close();
    await api?.stop();
  });

  async function scrapeApi(): Promise<string> {
    const response = await request(api.app).get('/metrics');
    expect(response.status).toBe(200);
    return response.text;
  }
  async function scrapeWorker(): Promise<string> {
    const response = await fetch(workerMetricsUrl);
    expect(response.status).toBe(200);
    return response.text();
  }

  it('counts a refused create as started and failed with invalid_request on both endpoints', async () => {
    const before = await scrapeApi();
    const auth = `Bearer ${api.tenantA.token}`;
    const created = await request(api.app)
      .post('/v1/sandboxes')
      .set('Authorization', auth)
      .send({ template: 'base', resources: { cpu: 1, memory_mib: 256, disk_mib: 300 } });
    expect(created.status).toBe(202);
    await until(async () => {
      const op = await request(api.app)
        .get(`/v1/operations/${created.body.id}`)
        .set('Authorization', auth);
      return op.body.done === true;
    });

    const apiAfter = await scrapeApi();
    // The API counts the start; the worker counts how the create ended and its watches.
    expect(
      sample(apiAfter, 'durable_sandbox_creates_started_total', 'template="base"') -
        sample(before, 'durable_sandbox_creates_started_total', 'template="base"'),
    ).toBe(1);
    for (const after of [apiAfter, await scrapeWorker()]) {
      const delta = (name: string, labels = '') =>
        sample(after, name, labels) - sample(before, name, labels);
      expect(
        delta('durable_sandbox_creates_finished_total', 'outcome="failed",code="invalid_request"'),
      ).toBe(1);
      expect(delta('durable_sandbox_refusal_to_failure_seconds_count')).toBe(1);
      expect(delta('durable_sandbox_watch_opens_total', 'resource="events",cause="initial"')).toBe(
        1,
      );
      expect(delta('durable_sandbox_watch_opens_total', 'resource="pods",cause="initial"')).toBe(1);
      expect(sample(after, 'durable_sandbox_watches_open', 'resource="events"')).toBe(0);
      expect(sample(after, 'durable_sandbox_watches_open', 'resource="pods"')).toBe(0);
    }
    const apiScrape = await scrapeApi();
    expect(
      sample(
        apiScrape,
        'durable_sandbox_http_request_duration_seconds_count',
        'method="POST",route="/v1/sandboxes",status="202"',
      ),
    ).toBeGreaterThanOrEqual(1);
  });

  it("serves the Temporal SDK's worker metrics on the worker endpoint", async () => {
    await until(async () => (await scrapeWorker()).includes('temporal_'), 30_000);
    expect(await scrapeWorker()).toMatch(/^temporal_\w+/m);
  });
});
