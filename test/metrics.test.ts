/**
 * Metrics: one refused create through the API moves the API's counter on the API's /metrics and
 * the create counters on the worker's metrics server, each series on one endpoint only (this
 * process holds both, as the embedded stack does), and the worker's endpoint carries the
 * Temporal SDK's own worker metrics with units in their names.
 */
import type { Server } from 'node:http';
import { pino } from 'pino';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../src/process/free-port.js';
import { startMetricsServer } from '../src/worker/metrics-server.js';
import { installRuntime } from '../src/worker/runtime.js';
import { acceptedCreate, startApiStack, type ApiStack } from './support/api.js';
import { waitUntil } from '../tools/wait-until.js';

/** The value of one sample line `name{labels} value` in a Prometheus text scrape, 0 when absent. */
function sample(text: string, name: string, labels = ''): number {
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue;
    const [series, value] = line.split(' ');
    if (series === `${name}${labels ? `{${labels}}` : ''}`) return Number(value);
  }
  return 0;
}

/** The part of a worker scrape the SDK's exporter produced. */
function sdkPart(text: string): string {
  return text.split('# Temporal SDK worker metrics')[1] ?? '';
}

describe('metrics', () => {
  let api: ApiStack;
  let workerMetrics: Server;
  let workerMetricsUrl: string;

  beforeAll(async () => {
    // This file's process gets a Runtime with the SDK's Prometheus exporter, as the worker has.
    const sdkPort = await freePort();
    installRuntime(pino({ level: 'silent' }), { prometheusBindAddress: `127.0.0.1:${sdkPort}` });
    api = await startApiStack({
      // This suite watches the node refuse disk 300 again and again.
      stack: { cluster: { startupDelayMs: 100 }, learnRootfsFloors: false },
    });
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

  it('counts a refused create as started (API) and failed with invalid_request (worker)', async () => {
    const before = await scrapeApi();
    const workerBefore = await scrapeWorker();
    const auth = `Bearer ${api.tenantA.token}`;
    const created = await acceptedCreate(api.app, api.tenantA, {
      template: 'base',
      resources: { cpu: 1, memory_mib: 256, disk_mib: 300 },
    });
    await waitUntil(async () => {
      const op = await request(api.app)
        .get(`/v1/operations/${created.id}`)
        .set('Authorization', auth);
      return op.body.done === true;
    });

    const apiAfter = await scrapeApi();
    // The API counts the start; the worker counts how the create ended and its informers' watches.
    expect(
      sample(apiAfter, 'durable_sandbox_creates_started_total', 'template="base"') -
        sample(before, 'durable_sandbox_creates_started_total', 'template="base"'),
    ).toBe(1);
    {
      const after = await scrapeWorker();
      const delta = (name: string, labels = '') =>
        sample(after, name, labels) - sample(workerBefore, name, labels);
      expect(
        delta('durable_sandbox_creates_finished_total', 'outcome="failed",code="invalid_request"'),
      ).toBe(1);
      expect(delta('durable_sandbox_refusal_to_failure_seconds_count')).toBe(1);
      // The create opened no watch of its own: the worker's two informers served it.
      expect(delta('durable_sandbox_watch_opens_total', 'resource="events",cause="initial"')).toBe(
        0,
      );
      expect(delta('durable_sandbox_watch_opens_total', 'resource="pods",cause="initial"')).toBe(0);
      expect(sample(after, 'durable_sandbox_watches_open', 'resource="events"')).toBe(1);
      expect(sample(after, 'durable_sandbox_watches_open', 'resource="pods"')).toBe(1);
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

  it('serves each durable_sandbox_* series on one endpoint only', async () => {
    const families = (text: string) =>
      new Set(
        [...text.matchAll(/^# TYPE (durable_sandbox_\w+) /gm)].map((match) => match[1] as string),
      );
    const apiFamilies = families(await scrapeApi());
    const workerFamilies = families(await scrapeWorker());
    expect(apiFamilies).toContain('durable_sandbox_creates_started_total');
    expect(workerFamilies).toContain('durable_sandbox_creates_finished_total');
    expect([...apiFamilies].filter((name) => workerFamilies.has(name))).toEqual([]);
  });

  it("serves the Temporal SDK's worker metrics with units in their names, durations in seconds", async () => {
    await waitUntil(async () => /_seconds_bucket/.test(sdkPart(await scrapeWorker())), {
      timeoutMs: 30_000,
    });
    const sdk = sdkPart(await scrapeWorker());
    expect(sdk).toMatch(/^temporal_\w+/m);
    expect(sdk).toMatch(/^temporal_\w+_seconds_bucket\{/m);
    expect(sdk).not.toMatch(/^temporal_\w+_(latency|duration)(_bucket)?\{/m);
    expect(sdk).not.toMatch(/_milliseconds/);
  });
});
