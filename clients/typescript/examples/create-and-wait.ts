/**
 * Creates a sandbox, waits until it runs, prints its IP, and deletes it again.
 *
 *     DURABLE_SANDBOX_URL=http://127.0.0.1:8080 DURABLE_SANDBOX_TOKEN=dev-token \
 *       npx tsx clients/typescript/examples/create-and-wait.ts [disk_mib]
 *
 * Outside this repository, import from '@durable-sandbox/client' instead of '../src/index.js'.
 */
import { DurableSandboxClient, DurableSandboxError } from '../src/index.js';

const client = new DurableSandboxClient({
  baseUrl: process.env.DURABLE_SANDBOX_URL ?? 'http://127.0.0.1:8080',
  token: process.env.DURABLE_SANDBOX_TOKEN ?? 'dev-token',
});

try {
  const operation = await client.createSandboxAndWait(
    {
      template: 'base',
      resources: { cpu: '500m', memory_mib: 1024, disk_mib: Number(process.argv[2] ?? 2048) },
    },
    { onUpdate: (op) => console.error(`${op.id}: ${op.status} ${op.phase}`) },
  );
  if (operation.status !== 'succeeded') {
    // A failed create is an answer, not an exception: its error names the cause.
    console.error(
      `create ${operation.status}: ${operation.error?.code}: ${operation.error?.message}`,
    );
    process.exitCode = 1;
  } else {
    const sandbox = operation.result!.sandbox;
    console.log(`sandbox ${sandbox.id} running at ${sandbox.pod.ip}`);
    const deleted = await client.waitForOperation((await client.deleteSandbox(sandbox.id)).id);
    console.log(
      `sandbox ${sandbox.id} ${deleted.status === 'succeeded' ? 'deleted' : deleted.status}`,
    );
  }
} catch (err) {
  // The API refused the request (or could not be reached): a typed code to act on.
  if (!(err instanceof DurableSandboxError)) throw err;
  console.error(`error: ${err.code}: ${err.message}`);
  process.exitCode = 1;
}
