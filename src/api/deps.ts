/** What the API needs from the outside world; built once per process by src/api/main.ts or a test. */
import type { Client } from '@temporalio/client';
import type { Logger } from 'pino';
import type { Config } from '../config/index.js';
import type { KubernetesClient } from '../kubernetes/client.js';
import type { Store } from '../store/index.js';
import type { Readiness } from './readiness.js';
import type { SpanStore } from '../tracing/span-store.js';
import type { TenantAdmission } from './tenant-admission.js';
import type { HostLookup } from '../webhooks/ssrf-guard.js';

/** Dependencies of {@link createApp} (src/api/app.ts). */
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
  /**
   * The cluster the workers create pods in: `/readyz` and creates check it can be used
   * (src/api/readiness.ts). Unset: no cluster check.
   */
  kubernetes?: KubernetesClient;
  /**
   * This process's per-replica tenant limit (waits: src/api/tenant-admission.ts); createApp builds
   * one from `config` when unset. Unset outside an app: no per-replica limit.
   */
  admission?: TenantAdmission;
  /** The readiness source; createApp builds one over the others when unset. */
  readiness?: Readiness;
  /**
   * The embedded stack's span store: when set, the app serves `GET /debug/traces/{trace_id}`
   * (src/api/handlers/debug-traces.ts). Unset in production.
   */
  spanStore?: SpanStore;
  /**
   * How a webhook endpoint's host is resolved at registration (src/api/handlers/webhook-routes.ts); unset:
   * node:dns `lookup`, as delivery. Tests set one that never answers.
   */
  webhookLookup?: HostLookup;
}
