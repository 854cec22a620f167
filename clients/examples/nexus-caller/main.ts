/**
 * A runnable caller (docs/nexus.md): registers the caller's namespace and the Nexus endpoint
 * when they are missing, runs a worker of the caller's workflows in that namespace, starts
 * {@link createSandboxThroughNexus} and prints its outcome as JSON. With `npm start` running
 * under `NEXUS_TENANTS=nexus-caller:dev`:
 *
 *     TEMPORAL_ADDRESS=127.0.0.1:7233 npx tsx clients/examples/nexus-caller/main.ts --disk-mib 2048
 *
 * Environment: TEMPORAL_ADDRESS (the frontend npm start prints), CALLER_NAMESPACE (default
 * `nexus-caller`), NEXUS_ENDPOINT (default `sandbox`), and for the endpoint it creates
 * TARGET_NAMESPACE (default `default`) and TARGET_TASK_QUEUE (default `sandbox-create`).
 */
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Client, Connection } from '@temporalio/client';
import { msToTs } from '@temporalio/common/lib/time.js';
import { NativeConnection, Worker } from '@temporalio/worker';
import type { createSandboxThroughNexus } from './workflows.js';

const env = (name: string, fallback: string) => process.env[name]?.trim() || fallback;

/** Creates what the caller needs on the server: its namespace and the endpoint (both idempotent). */
async function ensureSetUp(connection: Connection, namespace: string, endpoint: string) {
  const exists = (err: unknown) => /already (exists|registered)/i.test(String(err));
  await connection.workflowService
    .registerNamespace({ namespace, workflowExecutionRetentionPeriod: msToTs('1 day') })
    .catch((err: unknown) => {
      if (!exists(err)) throw err;
    });
  await connection.operatorService
    .createNexusEndpoint({
      spec: {
        name: endpoint,
        target: {
          worker: {
            namespace: env('TARGET_NAMESPACE', 'default'),
            taskQueue: env('TARGET_TASK_QUEUE', 'sandbox-create'),
          },
        },
      },
    })
    .catch((err: unknown) => {
      if (!exists(err)) throw err;
    });
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: { 'disk-mib': { type: 'string', default: '2048' }, template: { type: 'string' } },
  });
  const address = env('TEMPORAL_ADDRESS', '127.0.0.1:7233');
  const namespace = env('CALLER_NAMESPACE', 'nexus-caller');
  const endpoint = env('NEXUS_ENDPOINT', 'sandbox');
  const taskQueue = 'nexus-caller';
  const connection = await Connection.connect({ address });
  await ensureSetUp(connection, namespace, endpoint);
  const nativeConnection = await NativeConnection.connect({ address });
  // A namespace just registered takes a few seconds to reach every service.
  let worker: Worker | undefined;
  for (let attempt = 1; !worker; attempt++) {
    try {
      worker = await Worker.create({
        connection: nativeConnection,
        namespace,
        taskQueue,
        workflowsPath: fileURLToPath(new URL('./workflows.ts', import.meta.url)),
      });
    } catch (err) {
      if (attempt >= 30) throw err;
      await new Promise((resolve) => setTimeout(resolve, 1_000));
    }
  }
  const client = new Client({ connection, namespace });
  const outcome = await worker.runUntil(
    client.workflow.execute<typeof createSandboxThroughNexus>('createSandboxThroughNexus', {
      workflowId: `nexus-caller-${Date.now()}`,
      taskQueue,
      args: [
        endpoint,
        {
          template: values.template ?? 'base',
          resources: { cpu: 1, memory_mib: 1024, disk_mib: Number(values['disk-mib']) },
        },
      ],
    }),
  );
  console.log(JSON.stringify(outcome, null, 2));
  await nativeConnection.close();
  await connection.close();
  process.exitCode = outcome.status === 'running' ? 0 : 1;
}

await main();
