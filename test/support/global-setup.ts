/**
 * Vitest global setup: one in-memory Temporal dev server for the whole run (headless, free
 * port) and one workflow bundle, both handed to suites with `inject()`.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleSandboxWorkflows } from '../../src/worker/workflow-bundle.js';
import type { TestProject } from 'vitest/node';
import { startDevServer, type DevServer } from '../../environments/dev-server/dev-server.js';
import { freePort } from '../../src/process/free-port.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** `host:port` of the shared dev server's frontend. */
    temporalAddress: string;
    /** Path of the workflow bundle (production workflows plus test-only ones). */
    workflowBundlePath: string;
    /** `http://host:port/metrics` of the shared dev server's Prometheus metrics. */
    temporalMetricsUrl: string;
  }
}

let server: DevServer | undefined;
let bundleDir: string | undefined;

export async function setup(project: TestProject): Promise<void> {
  const metricsPort = await freePort('127.0.0.1');
  const [started, bundle] = await Promise.all([
    startDevServer({ ui: false, metricsPort }),
    // The production builder, with an entry point that adds test-only workflows.
    bundleSandboxWorkflows(fileURLToPath(new URL('./workflows.ts', import.meta.url))),
  ]);
  server = started;
  bundleDir = mkdtempSync(join(tmpdir(), 'durable-sandbox-bundle-'));
  const bundlePath = join(bundleDir, 'workflow-bundle.js');
  writeFileSync(bundlePath, bundle.code);
  project.provide('temporalAddress', server.address);
  project.provide('workflowBundlePath', bundlePath);
  project.provide('temporalMetricsUrl', `http://127.0.0.1:${metricsPort}/metrics`);
}

export async function teardown(): Promise<void> {
  await server?.stop();
  if (bundleDir) rmSync(bundleDir, { recursive: true, force: true });
}
