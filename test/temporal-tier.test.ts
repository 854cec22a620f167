/**
 * The production Temporal tier (environments/temporal-tier: temporal-server v1.29.1 on a
 * PostgreSQL of its own, set up by setup.sh) runs with the dynamic config of
 * environments/temporal-tier/dynamicconfig.yaml, the file docker-compose.yml and deploy/ carry:
 * a workflow's activity is handed to the worker eagerly, in the answer to the workflow task that
 * scheduled it, as the server's own `activity_eager_execution` counter for the task queue
 * reports (docs/architecture.md, "Round trips per create"). A real worker, the harness workflow.
 *
 * The tier serves mTLS only, from a CA of its own (docs/security.md, "Connecting to Temporal"):
 * a client without a certificate of that CA is refused; the worker's and the client's
 * connections, configured by the variables of src/config/temporal-connection.ts, get through.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker } from '@temporalio/worker';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import {
  startPostgresInstance,
  type PostgresInstance,
} from '../environments/postgresql/instance.js';
import { startTemporalTier, type TemporalTier } from '../environments/temporal-tier/launcher.js';
import {
  clientConnectionOptions,
  nativeConnectionOptions,
  parseTemporalCredentials,
  type TemporalCredentials,
} from '../src/config/temporal-connection.js';
import { createCertificateAuthority } from '../environments/tls/certificate-authority.js';
import { uniqueTaskQueue } from './support/temporal.js';
import { waitUntil } from '../tools/wait-until.js';

let postgres: PostgresInstance | undefined;
let tier: TemporalTier | undefined;
/** A client certificate of the tier's CA, as the API and the worker get theirs. */
let credentials: TemporalCredentials;
// A cold build of the tier's binaries may run in this hook (they are cached afterwards).
beforeAll(async () => {
  postgres = await startPostgresInstance();
  const admin = new URL(postgres.url());
  tier = await startTemporalTier({
    database: {
      host: admin.hostname,
      port: Number(admin.port),
      user: decodeURIComponent(admin.username),
      password: decodeURIComponent(admin.password),
    },
    ui: false,
  });
  credentials = parseTemporalCredentials(await tier.clientEnv('temporal-tier-test'));
}, 15 * 60_000);
afterAll(async () => {
  await tier?.stop();
  await postgres?.stop();
}, 120_000);

/** The server's counter `name`, summed over the series of `taskQueue` (`-` spelled `_`). */
async function serverCounter(name: string, taskQueue: string): Promise<number> {
  const text = await (await fetch(tier!.metricsUrl)).text();
  let sum = 0;
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!line.includes(`taskqueue="${taskQueue.replace(/-/g, '_')}"`)) continue;
    sum += Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return sum;
}

describe('the Temporal server tier', () => {
  it("hands a workflow's first activity to the worker eagerly (system.enableActivityEagerExecution)", async () => {
    const taskQueue = uniqueTaskQueue('temporal-tier');
    const connection = await Connection.connect(
      clientConnectionOptions(tier!.address, credentials),
    );
    const nativeConnection = await NativeConnection.connect(
      nativeConnectionOptions(tier!.address, credentials),
    );
    try {
      const worker = await Worker.create({
        connection: nativeConnection,
        namespace: tier!.namespace,
        taskQueue,
        workflowBundle: { codePath: inject('workflowBundlePath') },
        activities: { greet: async (name: string) => `hello, ${name}` },
      });
      const client = new Client({ connection, namespace: tier!.namespace });
      const results = await worker.runUntil(async () => {
        const done: string[] = [];
        for (const i of [1, 2, 3]) {
          done.push(
            await client.workflow.execute('harnessGreeting', {
              taskQueue,
              workflowId: `tier-eager-${taskQueue}-${i}`,
              args: ['tier'],
            }),
          );
        }
        return done;
      });
      expect(results).toEqual(['hello, tier', 'hello, tier', 'hello, tier']);
      // The server counts an eager dispatch when it answers the workflow task, and its metrics
      // reach /metrics a moment later; a worker may also decline one (no slot free at that
      // instant). So: at least one of the three, read until it shows. With the flag off the
      // server dispatches none and the counter stays 0.
      let eager = 0;
      await waitUntil(
        async () => (eager = await serverCounter('activity_eager_execution', taskQueue)) >= 1,
        { timeoutMs: 30_000 },
      ).catch(() => undefined); // the assertion below says what was seen
      expect(eager).toBeGreaterThanOrEqual(1);
      expect(eager).toBeLessThanOrEqual(3);
    } finally {
      await nativeConnection.close();
      await connection.close();
    }
  });
});

describe("the tier's mTLS", () => {
  /** What the frontend answers a health check on a connection with `options`. */
  const healthCheck = async (options: Parameters<typeof Connection.connect>[0]) => {
    const connection = await Connection.connect({ ...options, connectTimeout: 5_000 });
    try {
      return await connection.healthService.check({});
    } finally {
      await connection.close();
    }
  };

  it('serves a client with a certificate of its CA', async () => {
    const answer = await healthCheck(clientConnectionOptions(tier!.address, credentials));
    expect(answer.status).toBe(1); // SERVING
  });

  it('refuses a plaintext client', async () => {
    await expect(healthCheck({ address: tier!.address })).rejects.toThrow();
  });

  it('refuses a TLS client that trusts the CA but shows no certificate', async () => {
    const { clientCert: _dropped, ...serverOnly } = credentials.tls!;
    await expect(
      healthCheck(clientConnectionOptions(tier!.address, { tls: serverOnly })),
    ).rejects.toThrow(/certificate|handshake|socket|Failed to connect|UNAVAILABLE/i);
  });

  it('refuses a client whose certificate another CA signed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-other-ca-'));
    try {
      const other = await createCertificateAuthority(dir);
      const stranger = await other.issueClient('durable-sandbox-api');
      const tls = {
        ...credentials.tls!,
        clientCert: {
          cert: { variable: 'TEMPORAL_TLS_CLIENT_CERT_PATH', path: stranger.certPath },
          key: { variable: 'TEMPORAL_TLS_CLIENT_KEY_PATH', path: stranger.keyPath },
        },
      };
      await expect(healthCheck(clientConnectionOptions(tier!.address, { tls }))).rejects.toThrow();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
