/**
 * `node --import tsx src/worker/healthcheck.ts`: the worker container's health check
 * (docker-compose.yml). Healthy when a worker on this host polls the task queue (Temporal lists
 * a workflow-task poller whose identity is `<pid>@<this hostname>`, the SDK's default identity,
 * that polled recently), the namespace has the workflows' search attributes, and the cluster
 * can be used (src/kubernetes/cluster-check.ts: reachable, credentials, the worker's permissions of
 * deploy/rbac.yaml, `WORKER_PERMISSIONS`). Exits 0 when healthy, else 1 with one line on stderr saying why.
 * Reads TEMPORAL_ADDRESS, TEMPORAL_NAMESPACE, TEMPORAL_TASK_QUEUE and the TLS / API key variables
 * (src/config/temporal-connection.ts) like the worker does.
 */
import { hostname } from 'node:os';
import { pathToFileURL } from 'node:url';
import { Connection, type ConnectionLike } from '@temporalio/client';
import { loadConfig } from '../config/index.js';
import { clientConnectionOptions } from '../config/temporal-connection.js';
import { createKubernetesClient } from '../kubernetes/client.js';
import { WORKER_PERMISSIONS, checkCluster } from '../kubernetes/cluster-check.js';
import { checkSearchAttributes } from '../temporal/search-attributes.js';

/**
 * A poller counts while its last poll is at most this old, in ms. Workflow-task polls are long
 * polls of about a minute, so a healthy worker's last poll can be that old.
 */
export const POLLER_MAX_AGE_MS = 120_000;

/** `temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW` (@temporalio/proto). */
const TASK_QUEUE_TYPE_WORKFLOW = 1;

/** What {@link checkWorkerPolling} needs. */
export interface WorkerPollingCheck {
  connection: ConnectionLike;
  namespace: string;
  taskQueue: string;
  /** The host whose worker must poll (default: this host). */
  host?: string;
  /** Epoch ms to measure the poller's age from (default: now). */
  now?: number;
}

/**
 * Asks Temporal whether a worker on `host` polls the task queue's workflow tasks.
 * @returns `{healthy: true}`, or `{healthy: false, reason}` naming what is missing
 * @throws the client's error when Temporal does not answer
 */
export async function checkWorkerPolling(
  check: WorkerPollingCheck,
): Promise<{ healthy: true } | { healthy: false; reason: string }> {
  const host = check.host ?? hostname();
  const now = check.now ?? Date.now();
  const { pollers } = await check.connection.workflowService.describeTaskQueue({
    namespace: check.namespace,
    taskQueue: { name: check.taskQueue },
    taskQueueType: TASK_QUEUE_TYPE_WORKFLOW,
  });
  const recent = pollers.filter((poller) => {
    const seconds = Number(poller.lastAccessTime?.seconds ?? 0);
    return now - seconds * 1000 <= POLLER_MAX_AGE_MS;
  });
  if (recent.some((poller) => poller.identity?.endsWith(`@${host}`))) return { healthy: true };
  return {
    healthy: false,
    reason:
      `no worker on host ${host} polled task queue ${check.taskQueue} in the last ` +
      `${POLLER_MAX_AGE_MS / 1000} s (${recent.length} recent poller(s) elsewhere)`,
  };
}

async function main(): Promise<void> {
  const config = loadConfig();
  if (!config.temporalAddress) throw new Error('TEMPORAL_ADDRESS is not set');
  const connection = await Connection.connect({
    ...clientConnectionOptions(config.temporalAddress, config.temporalCredentials),
    connectTimeout: 5_000,
  });
  try {
    const problems: string[] = [];
    const result = await checkWorkerPolling({
      connection,
      namespace: config.temporalNamespace,
      taskQueue: config.taskQueue,
    });
    if (!result.healthy) problems.push(result.reason);
    const attributes = await checkSearchAttributes(
      connection,
      config.temporalNamespace,
      config.temporalAddress,
    );
    if (attributes.problem) problems.push(attributes.problem);
    const cluster = await checkCluster(
      createKubernetesClient({
        kubeconfigPath: config.kubeconfig,
        namespace: config.sandboxNamespace,
      }),
      WORKER_PERMISSIONS,
    );
    if (!cluster.ok) problems.push(cluster.problem);
    if (problems.length > 0) {
      process.stderr.write(`unhealthy: ${problems.join('; ')}\n`);
      process.exitCode = 1;
    }
  } finally {
    await connection.close();
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  main().catch((err: unknown) => {
    process.stderr.write(`unhealthy: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  });
}
