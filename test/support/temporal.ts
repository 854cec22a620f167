/**
 * Connects a suite to the run's shared dev server: a Client, a NativeConnection for Workers,
 * the shared workflow bundle, and a task queue of its own.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import { inject } from 'vitest';

/** What a suite needs to run workflows on the shared dev server. */
export interface TemporalTestContext {
  address: string;
  client: Client;
  nativeConnection: NativeConnection;
  workflowBundle: { codePath: string };
  /** Closes both connections. */
  close(): Promise<void>;
}

/** Opens connections to the shared dev server; call `close()` in afterAll. */
export async function connectToTestServer(): Promise<TemporalTestContext> {
  installQuietRuntime();
  const address = inject('temporalAddress');
  const connection = await Connection.connect({ address });
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    address,
    client: new Client({ connection }),
    nativeConnection,
    workflowBundle: { codePath: inject('workflowBundlePath') },
    async close() {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

/** A task queue name no other suite or test uses. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

let runtimeInstalled = false;

/**
 * Keeps the SDK's own logs to errors so test output stays readable (expected activity failures
 * log at WARN; a real problem fails a test).
 */
function installQuietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  try {
    Runtime.install({ logger: new DefaultLogger('ERROR') });
  } catch {
    // A Runtime was already installed in this process; keep it.
  }
}
