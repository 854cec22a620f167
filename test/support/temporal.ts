/**
 * Connects a suite to the run's shared dev server: a Client, a NativeConnection for Workers,
 * the shared workflow bundle, and a task queue of its own.
 */
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { DefaultLogger, NativeConnection, Runtime } from '@temporalio/worker';
import type { Logger } from 'pino';
import { inject } from 'vitest';
import { sdkLogForwarder } from '../../src/worker/runtime.js';

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

/**
 * Every scheduled activity of a workflow, in history order: its type and the summary the
 * Temporal UI shows for it (the ActivityTaskScheduled event's `userMetadata.summary`).
 */
export async function activitySummaries(
  client: Client,
  workflowId: string,
): Promise<Array<{ type?: string | null; summary?: string }>> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return (history.events ?? [])
    .filter(
      (event) =>
        event.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    )
    .map((event) => ({
      type: event.activityTaskScheduledEventAttributes?.activityType?.name,
      summary: event.userMetadata?.summary
        ? defaultPayloadConverter.fromPayload<string>(event.userMetadata.summary)
        : undefined,
    }));
}

/** A task queue name no other suite or test uses. */
export function uniqueTaskQueue(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

let runtimeInstalled = false;
let sdkLogSink: Logger | undefined;

/**
 * Sends what workflows and activities log through the SDK (`log`) to `logger` from now on, as
 * src/worker/runtime.ts does in production; undefined drops it again. One sink per process: the
 * suites run their stacks one at a time.
 */
export function routeSdkLogsTo(logger: Logger | undefined): void {
  sdkLogSink = logger;
}

/**
 * Installs a Runtime whose SDK lines are kept to errors so test output stays readable (expected
 * activity failures log at WARN; a real problem fails a test), and whose workflow and activity
 * lines go to the sink of {@link routeSdkLogsTo}.
 */
function installQuietRuntime(): void {
  if (runtimeInstalled) return;
  runtimeInstalled = true;
  const quiet = new DefaultLogger('ERROR');
  try {
    Runtime.install({
      logger: new DefaultLogger('INFO', (entry) => {
        const ours = ['workflow', 'activity'].includes(String(entry.meta?.sdkComponent));
        if (ours && sdkLogSink) sdkLogForwarder(sdkLogSink, 'ERROR')(entry);
        else if (!ours) quiet.log(entry.level, entry.message, entry.meta);
      }),
    });
  } catch {
    // A Runtime was already installed in this process; keep it.
  }
}
