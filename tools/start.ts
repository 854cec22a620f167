/**
 * `npm start`: the embedded stack in one process. It starts what the configuration leaves
 * unset — the Temporal dev server (state in DATA_DIR, UI on) unless TEMPORAL_ADDRESS, the
 * simulated cluster unless KUBECONFIG (or the real apiserver tier with CLUSTER=real), SQLite
 * unless DATABASE_URL — then the worker and the
 * API, prints where everything is, and stops all of it on Ctrl-C (SIGINT) or SIGTERM: `stopping`
 * at once, then each part in reverse order, `<DATA_DIR>/stack.pid` last; a second Ctrl-C a
 * second later forces the exit (src/process/shutdown-signals.ts). A failed start is one plain line
 * on stderr, or a JSON line with LOG_FORMAT=json (src/process/startup-failure.ts).
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { Client } from '@temporalio/client';
import { announceLostEvent, type EventAnnouncer } from '../src/activities/webhook-delivery.js';
import { createApp } from '../src/api/app.js';
import { listenApi } from '../src/api/http-server.js';
import { rootfsFloorsOf } from '../src/api/rootfs-floors.js';
import { apiRegistry } from '../src/api/metrics.js';
import { collectProcessMetrics } from '../src/process/process-metrics.js';
import { ConfigError, loadConfig, type Config } from '../src/config/index.js';
import { DEFAULT_API_URL } from '../clients/cli/program.js';
import { createLogger } from '../src/process/logger.js';
import { onShutdownSignals } from '../src/process/shutdown-signals.js';
import { reportStartupFailure, startupStep, storeStep } from '../src/process/startup-failure.js';
import {
  startEmbeddedRealCluster,
  type EmbeddedRealCluster,
} from '../environments/apiserver-tier/embedded.js';
import { createKubernetesClient } from '../src/kubernetes/client.js';
import { SimulatedCluster } from '../environments/simulated-cluster/index.js';
import { openStore } from '../src/store/index.js';
import { serveWorker, type ServeWorkerOptions } from '../src/worker/serve.js';
import { freePort } from '../src/process/free-port.js';
import { clusterResetReason, explainPodsOfBefore } from './cluster-reset.js';
import { credentialHint } from './credential-hint.js';
import { startDevServer } from '../environments/dev-server/dev-server.js';
import { SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { SpanStore } from '../src/tracing/span-store.js';
import { tracingChoice, type Tracing } from '../src/tracing/spans.js';
import { tracingClientInterceptors } from '../src/tracing/temporal.js';

const logger = createLogger('stack');
const cleanups: Array<() => Promise<unknown>> = [];
let stopping: Promise<void> | undefined;

async function main(): Promise<void> {
  const config = loadConfig();
  const dataDir = resolve(config.dataDir);
  mkdirSync(dataDir, { recursive: true });
  lockDataDir(dataDir);
  // First: the SDK patches node's http server, and the worker and client look for it.
  const traces = await startStackTracing(
    `${cliPrefix(`http://127.0.0.1:${config.port}`)}npx durable-sandbox`,
  );

  // The API's port is the user's to choose: check it before starting anything that takes time.
  if (!(await isPortFree(config.port))) {
    throw new ConfigError(
      'PORT',
      `${config.port} is in use on 127.0.0.1 (another npm start, or another service); ` +
        `choose another port, e.g. PORT=${await freePort()} npm start`,
    );
  }

  let temporalAddress = config.temporalAddress;
  let uiUrl: string | undefined;
  const notes: string[] = [];
  if (!temporalAddress) {
    logger.info('starting the Temporal dev server');
    const port = await preferredPort(7233, notes, 'Temporal frontend');
    const uiPort = await preferredPort(8233, notes, 'Temporal UI');
    const server = await startDevServer({
      port,
      uiPort,
      dbFile: join(dataDir, 'temporal.db'),
      // The default rollback journal with full sync costs an fsync per transaction; WAL with
      // normal sync survives a crash of the process and costs far less (loses at most the last
      // transactions on power loss, acceptable for the embedded stack).
      sqlitePragmas: { journal_mode: 'wal', synchronous: 'normal' },
      log: (line) => logger.debug({ source: 'temporal' }, line),
    });
    cleanups.push(() => server.stop());
    temporalAddress = server.address;
    uiUrl = server.uiUrl;
  }

  let kubeconfigPath = config.kubeconfig;
  let realCluster: EmbeddedRealCluster | undefined;
  if (clusterMode(config.kubeconfig) === 'real') {
    logger.info('starting the real apiserver tier (etcd, kube-apiserver, node agent)');
    realCluster = await startEmbeddedRealCluster({
      dataDir,
      namespace: config.sandboxNamespace,
      nodeDelayMs: simulatedNodeDelayMs(),
      rootfsMib: simulatedRootfsMib(config.templates),
      log: (line) => logger.debug({ source: 'apiserver-tier' }, line),
    });
    cleanups.push(() => realCluster!.stop());
    kubeconfigPath = realCluster.kubeconfigPath;
  } else if (!kubeconfigPath) {
    const cluster = await SimulatedCluster.start({
      startupDelayMs: simulatedNodeDelayMs(),
      rootfsMib: simulatedRootfsMib(config.templates),
    });
    cleanups.push(() => cluster.close());
    kubeconfigPath = join(dataDir, 'kubeconfig');
    cluster.writeKubeconfig(kubeconfigPath, config.sandboxNamespace);
  }
  const kubernetes = createKubernetesClient({
    kubeconfigPath,
    namespace: config.sandboxNamespace,
  });

  const apiUrl = `http://127.0.0.1:${config.port}`;
  const sqliteFile = join(dataDir, 'store.db');
  const store = await startupStep(storeStep(config, sqliteFile), () =>
    openStore({
      databaseUrl: config.databaseUrl,
      sqliteFile,
      webhookSecretKeys: config.webhooks.secretKeys,
    }),
  );
  cleanups.push(() => store.close());
  let explainMissingPod: ServeWorkerOptions['explainMissingPod'];
  let lostInRestart: string[] = [];
  if (!config.kubeconfig) {
    // The stack's cluster starts empty (tools/cluster-reset.ts): the pods of before are gone.
    const reset = clusterResetReason(realCluster !== undefined);
    explainMissingPod = await explainPodsOfBefore(store, reset);
    // A sandbox still `running` from before lost its pod.
    const lost = await store.markRunningSandboxesLost({ reason: `its pod is gone: ${reset}` });
    lostInRestart = lost;
    if (lost.length > 0) {
      logger.warn({ sandbox_ids: lost }, 'running sandboxes lost their pods in the restart');
      notes.push(
        `${lost.length} sandbox(es) running before the restart lost their pods and are now lost ` +
          `(list: ${cliPrefix(apiUrl)}npx durable-sandbox list --state lost; ` +
          `delete: ${cliPrefix(apiUrl)}npx durable-sandbox delete sbx_…)`,
      );
    }
  }

  const metricsPort = await preferredPort(config.metricsPort, notes, 'worker metrics');
  const worker = await serveWorker({
    config,
    temporalAddress,
    kubernetes,
    store,
    logger,
    metricsPort,
    metricsHost: '127.0.0.1',
    processMetrics: false,
    // A create that was waiting when the stack stopped finds its pod gone: say why.
    explainMissingPod,
  });
  cleanups.push(() => worker.stop());

  // The API's client shares the worker's connection, so creates start eagerly: the workflow's
  // first task is handed to this process's worker in the start's answer (no task-queue poll).
  const temporal = new Client({
    connection: worker.connection,
    namespace: config.temporalNamespace,
    interceptors: { workflow: tracingClientInterceptors(traces.tracing) },
  });
  // Their `sandbox.lost` events are in the store (the feed); hand them to webhooks too.
  await announceLostInRestart(
    { client: temporal, taskQueue: config.taskQueue, store },
    lostInRestart,
  );
  // Operations link to their workflow page in the UI the stack started (or TEMPORAL_UI_URL's).
  const apiConfig = { ...config, temporalAddress, temporalUiUrl: config.temporalUiUrl ?? uiUrl };
  // One process, two endpoints: its process metrics are the API's (the worker serves its own).
  collectProcessMetrics(apiRegistry);
  const app = createApp({
    temporal,
    store,
    config: apiConfig,
    logger,
    kubernetes,
    eagerWorkflowStart: true,
    spanStore: traces.spanStore,
  });
  const server = await listenApi(app, {
    port: config.port,
    host: '127.0.0.1',
    keepAliveTimeoutMs: config.httpKeepAliveTimeoutMs,
  }).catch((err: Error) => {
    throw new ConfigError('PORT', `${config.port} cannot be used: ${err.message}`);
  });
  cleanups.push(
    () =>
      new Promise<void>((resolveClose) => {
        server.close(() => resolveClose());
        server.closeIdleConnections();
        // In-flight requests (a synchronous create waits up to its budget) get 5 s, then go.
        setTimeout(() => server.closeAllConnections(), 5_000).unref();
      }),
  );

  const credential = credentialHint(config);
  const token = credential.bearer;
  const baseFloor = (await rootfsFloorsOf({ store, config }, ['base'])).get('base');
  const lines = [
    '',
    'durable-sandbox is running.',
    `  API:          ${apiUrl}   (${credential.line})`,
    `  Temporal UI:  ${uiUrl ?? `(external Temporal at ${temporalAddress})`}`,
    `  Temporal:     ${temporalAddress}, task queue ${config.taskQueue}`,
    `  Kubernetes:   ${kubernetesLine(config.kubeconfig, kubeconfigPath, config.sandboxNamespace, realCluster)}`,
    `  Metrics:      ${apiUrl}/metrics (API), http://127.0.0.1:${metricsPort}/metrics (worker)`,
    ...(process.env.SIMULATED_NODE_DELAY_MS && !config.kubeconfig
      ? [
          `  ${realCluster ? 'Node agent' : 'Simulated node'}: answers after ${simulatedNodeDelayMs()} ms (SIMULATED_NODE_DELAY_MS)`,
        ]
      : []),
    `  Store:        ${config.databaseUrl ? 'PostgreSQL (DATABASE_URL)' : join(dataDir, 'store.db')}`,
    `  Traces:       ${traces.line}`,
    '',
    baseFloor && baseFloor.source !== 'unknown'
      ? `The rootfs floor of "base" is known (${baseFloor.rootfsMib} MiB, ${baseFloor.source}): this create is ` +
        `refused at once, before 202; to watch the node refuse one again, start afresh (rm -rf ${dataDir}):`
      : 'Try a create the node refuses (disk smaller than the 451 MiB root filesystem of "base"):',
    `  curl -s -X POST ${apiUrl}/v1/sandboxes -H 'Authorization: Bearer ${token}' \\`,
    `    -H 'Content-Type: application/json' \\`,
    `    -d '{"template":"base","resources":{"cpu":1,"memory_mib":1024,"disk_mib":300}}'`,
    `or with the CLI: ${cliPrefix(apiUrl)}npx durable-sandbox create --template base --disk-mib 300 --wait`,
    ...notes.map((note) => `Note: ${note}.`),
    '',
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join('\n'));
}

/**
 * Starts the SDK for the embedded stack (docs/observability.md): with OTEL_* exporters as
 * configured; when nothing is configured, into an in-memory span store the API serves at
 * `/debug/traces/{trace_id}` (read by `npx durable-sandbox trace op_…`); none when
 * OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED=true.
 * @param cli how the banner spells the CLI for this stack's API (`DURABLE_SANDBOX_URL=… npx …`)
 * @returns the SDK, the span store when spans stay in memory, and the banner's line
 */
async function startStackTracing(cli: string): Promise<{
  tracing?: Tracing;
  spanStore?: SpanStore;
  line: string;
}> {
  const choice = tracingChoice();
  if (choice === 'off') return { line: 'off (OTEL_TRACES_EXPORTER=none or OTEL_SDK_DISABLED)' };
  const { startTracing } = await import('../src/tracing/sdk.js');
  if (choice === 'exporters') {
    const tracing = startTracing({ serviceName: 'durable-sandbox' });
    cleanups.push(() => tracing.shutdown());
    return { tracing, line: `exported as OTEL_TRACES_EXPORTER and OTEL_EXPORTER_OTLP_* say` };
  }
  const spanStore = new SpanStore();
  const tracing = startTracing({
    serviceName: 'durable-sandbox',
    spanProcessors: [new SimpleSpanProcessor(spanStore)],
  });
  cleanups.push(() => tracing.shutdown());
  return {
    tracing,
    spanStore,
    line: `kept in memory; print one create's: ${cli} trace op_…`,
  };
}

/**
 * Claims DATA_DIR for this process (`<DATA_DIR>/stack.pid`), so a second `npm start` on the same
 * directory (e.g. started while the first is still shutting down) cannot open the same Temporal
 * and SQLite files. A lock left by a process that no longer runs is taken over.
 * @throws ConfigError naming DATA_DIR when a running process holds it
 */
function lockDataDir(dataDir: string): void {
  const lockFile = join(dataDir, 'stack.pid');
  try {
    writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
  } catch {
    const holder = Number(readFileSync(lockFile, 'utf8'));
    if (holder && holder !== process.pid && isRunning(holder)) {
      throw new ConfigError(
        'DATA_DIR',
        `${dataDir} is in use by another npm start (pid ${holder}); stop it or wait until it ` +
          `has stopped (if it is gone, remove ${lockFile})`,
      );
    }
    writeFileSync(lockFile, String(process.pid));
  }
  cleanups.unshift(async () => rmSync(lockFile, { force: true }));
}

/**
 * Whether `pid` is a running `npm start` (this script). On Linux the command line is checked, so
 * a pid reused by an unrelated process after a crash does not keep the lock.
 */
function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('tools/start.ts');
  } catch {
    return true; // no /proc: trust the pid
  }
}

/**
 * `port` when it is free on 127.0.0.1, else any free port; a fallback is noted for the banner.
 */
async function preferredPort(port: number, notes: string[], what: string): Promise<number> {
  if (await isPortFree(port)) return port;
  const other = await freePort();
  notes.push(`port ${port} (${what}) was taken, so it is on ${other} this time`);
  return other;
}

/** Whether `port` can be listened on at 127.0.0.1 now. */
async function isPortFree(port: number): Promise<boolean> {
  const { createServer } = await import('node:net');
  return new Promise<boolean>((resolveProbe) => {
    const probe = createServer();
    probe.once('error', () => resolveProbe(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolveProbe(true)));
  });
}

/**
 * SIMULATED_NODE_DELAY_MS (embedded stack only, default 300): how long the simulated node takes
 * before it gives a pod its IP or refuses it. A large value leaves creates waiting, to try
 * cancel and delete by hand.
 * @throws ConfigError when it is not a non-negative integer
 */
function simulatedNodeDelayMs(): number {
  const raw = process.env.SIMULATED_NODE_DELAY_MS;
  if (raw === undefined || raw.trim() === '') return 300;
  if (!/^\d+$/.test(raw.trim())) {
    throw new ConfigError(
      'SIMULATED_NODE_DELAY_MS',
      `must be a non-negative integer, got "${raw}"`,
    );
  }
  return Number(raw);
}

/**
 * The cluster `npm start` runs on: `CLUSTER=real` starts the real apiserver tier
 * (apiserver-tier/embedded.ts), unset or `simulated` the simulated cluster; KUBECONFIG set uses
 * that cluster and does not combine with `CLUSTER=real`.
 * @throws ConfigError naming CLUSTER for another value or together with KUBECONFIG
 */
function clusterMode(kubeconfig: string | undefined): 'real' | 'simulated' | 'external' {
  const raw = (process.env.CLUSTER ?? '').trim();
  if (raw !== '' && raw !== 'real' && raw !== 'simulated') {
    throw new ConfigError('CLUSTER', `must be "real" or "simulated", got "${raw}"`);
  }
  if (raw === 'real' && kubeconfig) {
    throw new ConfigError(
      'CLUSTER',
      'CLUSTER=real starts a local apiserver tier; unset KUBECONFIG',
    );
  }
  if (kubeconfig) return 'external';
  return raw === 'real' ? 'real' : 'simulated';
}

/**
 * What the banner's CLI line needs in front of `npx durable-sandbox`: the API's URL when it is
 * not the CLI's default (a non-default PORT), e.g. `DURABLE_SANDBOX_URL=http://127.0.0.1:8081 `.
 */
function cliPrefix(apiUrl: string): string {
  return apiUrl === DEFAULT_API_URL ? '' : `DURABLE_SANDBOX_URL=${apiUrl} `;
}

/** The banner's Kubernetes line. */
function kubernetesLine(
  external: string | undefined,
  kubeconfigPath: string,
  namespace: string,
  real: EmbeddedRealCluster | undefined,
): string {
  if (external) return kubeconfigPath;
  if (real) {
    return (
      `real kube-apiserver ${real.url} (etcd, node agent ${real.nodeName}; ready in ` +
      `${(real.startToReadyMs / 1000).toFixed(1)} s); service kubeconfig ${kubeconfigPath}; ` +
      `export KUBECONFIG=${real.adminKubeconfigPath}; kubectl get pods,events`
    );
  }
  // Plain `kubectl` would ask the default kubeconfig's server (often :8080, our API) and print
  // discovery errors: name the file to export.
  return `simulated cluster; export KUBECONFIG=${kubeconfigPath}; kubectl get pods,events (namespace ${namespace})`;
}

async function stop(exitCode: number, signal?: NodeJS.Signals): Promise<void> {
  stopping ??= (async () => {
    if (signal) {
      logger.info(
        { signal },
        'stopping: the API, the worker, the cluster and Temporal (Ctrl-C again to force)',
      );
    }
    for (const cleanup of cleanups.reverse()) {
      try {
        await cleanup();
      } catch (err) {
        logger.warn({ err }, 'cleanup failed');
      }
    }
    process.exit(exitCode);
  })();
  return stopping;
}

onShutdownSignals({
  stop: (signal) => void stop(0, signal),
  force(signal) {
    // What it started goes too: the Temporal dev server and the apiserver tier stop when this
    // process's end closes their stdin. The next npm start takes over the stale stack.pid.
    logger.warn({ signal }, 'stopped at once (second Ctrl-C): running creates were cut');
  },
});

main().catch((err: unknown) => {
  reportStartupFailure({ role: 'the stack', err, logger });
  void stop(1);
});

/**
 * The simulated node holds every catalog template's image: its rootfs is the template's declared
 * `rootfs_mib`, else 451 MiB (the size `base` has in the README's examples).
 */
function simulatedRootfsMib(templates: Config['templates']): Record<string, number> {
  return Object.fromEntries(
    Object.entries(templates).map(([name, template]) => [name, template.rootfs_mib ?? 451]),
  );
}

/**
 * Announces to webhooks the `sandbox.lost` events of the sandboxes a restart found lost; a
 * failure is logged (the events stay in the feed, and a recover does not cover them).
 */
async function announceLostInRestart(announcer: EventAnnouncer, ids: string[]): Promise<void> {
  for (const id of ids) {
    const sandbox = await announcer.store.getSandboxById(id);
    if (!sandbox) continue;
    await announceLostEvent(announcer, sandbox).catch((err: unknown) => {
      logger.warn({ err, sandbox_id: id }, 'announcing a lost sandbox to webhooks failed');
    });
  }
}
