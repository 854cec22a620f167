/** What the API needs from the outside world; built once per process by api/main.ts or a test. */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import type { Store } from '../store/index.js';

/** Dependencies of {@link createApp} (api/app.ts). */
export interface AppDeps {
  /** A Temporal client on the namespace the workers serve. */
  temporal: Client;
  store: Store;
  config: Config;
  logger: Logger;
  /**
   * Ask Temporal to start creates eagerly (`requestEagerStart`): only when `temporal` is built on
   * the NativeConnection of a worker of the task queue in this process (the embedded stack).
   */
  eagerWorkflowStart?: boolean;
}
