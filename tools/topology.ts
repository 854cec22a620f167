/**
 * `npm run topology`: the production topology on this machine, no containers
 * (environments/topology, docs/production.md): PostgreSQL (its own instance unless
 * DATABASE_URL), the Temporal server tier with its UI, the real apiserver tier with the node
 * agent, two API replicas behind a load balancer and two workers as separate processes. Prints
 * where everything is; Ctrl-C (SIGINT) or SIGTERM stops all of it. The processes' output goes
 * to a log file named in the banner.
 *
 * PORT picks the load balancer's port (default 8080, any free port when taken);
 * SIMULATED_NODE_DELAY_MS the node agent's delay; API_TOKENS, LOG_LEVEL and the other settings
 * of src/config/index.ts reach the API and worker processes.
 */
import { createWriteStream, mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEV_TOKEN } from '../src/config/index.js';
import { startTopology, type Topology } from '../environments/topology/index.js';

const logFile = join(mkdtempSync(join(tmpdir(), 'durable-sandbox-topology-log-')), 'topology.log');
const logStream = createWriteStream(logFile);
let topology: Topology | undefined;
let stopping = false;

async function stop(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  process.stdout.write('\nstopping the topology...\n');
  await topology?.stop();
  logStream.end();
  process.exit(code);
}
process.on('SIGINT', () => void stop(0));
process.on('SIGTERM', () => void stop(0));

async function isPortFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', () => resolve(false));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(true)));
  });
}

try {
  const wanted = Number(process.env.PORT ?? 8080);
  process.stdout.write(`starting the production topology (log: ${logFile})...\n`);
  const passThrough = Object.fromEntries(
    [
      'API_TOKENS',
      'LOG_LEVEL',
      'CREATE_DEADLINE_MS',
      'SYNC_READINESS_BUDGET_MS',
      'SANDBOX_TEMPLATES',
      // Unset: the built-in defaults, a shared installation's (docs/configuration.md).
      'TENANT_LIMITS',
    ]
      .filter((name) => process.env[name])
      .map((name) => [name, process.env[name]!]),
  );
  // A development topology: without API_TOKENS, its API replicas take the dev token.
  if (!process.env.API_TOKENS) passThrough.ALLOW_DEV_TOKEN = 'true';
  topology = await startTopology({
    databaseUrl: process.env.DATABASE_URL || undefined,
    port: (await isPortFree(wanted)) ? wanted : 0,
    nodeDelayMs: Number(process.env.SIMULATED_NODE_DELAY_MS ?? 300),
    env: passThrough,
    log: (line) => logStream.write(`${line}\n`),
  });
  const t = topology;
  // A client certificate of the tier's CA for the operator's own tools (the Temporal CLI).
  const operatorEnv = await t.temporal.clientEnv('operator');
  const token = process.env.API_TOKENS ? '<a token from API_TOKENS>' : DEV_TOKEN;
  const lines = [
    '',
    `The production topology is running (ready in ${(t.startToReadyMs / 1000).toFixed(1)} s).`,
    `  API:          ${t.url}   (load balancer over ${t.apis.map((a) => `${a.name} ${a.url}`).join(', ')}; token: ${token})`,
    `  Workers:      ${t.workers.map((w) => `${w.name} (metrics ${w.url})`).join(', ')}; worker-2 reaches kube-apiserver through 127.0.0.1:${t.worker2ApiserverLink.port}`,
    `  Temporal:     ${t.temporal.address} (temporal-server v1.29.1 on PostgreSQL, SQL visibility), namespace ${t.temporal.namespace}`,
    `  Temporal UI:  ${t.temporal.uiUrl ?? '(off)'}`,
    ...(t.temporal.tls
      ? [
          `  Temporal TLS: mTLS only, CA ${t.temporal.tls.caPath}; the Temporal CLI connects with`,
          `    ${Object.entries(operatorEnv)
            .map(([name, value]) => `${name}=${value}`)
            .join(' \\\n    ')} \\\n    temporal --address ${t.temporal.address} workflow list`,
        ]
      : []),
    `  Kubernetes:   real kube-apiserver ${t.apiserver.url} (etcd, node agent ${t.apiserver.nodeName}); kubectl --kubeconfig ${t.adminKubeconfigPath} get pods,events`,
    `  PostgreSQL:   ${t.postgres ? `own instance 127.0.0.1:${t.postgres.port} (databases temporal, temporal_visibility, durable_sandbox)` : 'DATABASE_URL'}`,
    `  Store:        ${t.storeUrl.replace(/:[^:@/]+@/, ':***@')}`,
    `  Logs:         ${logFile}`,
    '',
    'Try a create:',
    `  curl -s -X POST ${t.url}/v1/sandboxes -H 'Authorization: Bearer ${token}' \\`,
    `    -H 'Content-Type: application/json' \\`,
    `    -d '{"template":"base","resources":{"cpu":1,"memory_mib":1024,"disk_mib":2048}}'`,
    '',
    'Ctrl-C stops everything.',
    '',
  ];
  process.stdout.write(lines.join('\n'));
} catch (err) {
  process.stderr.write(`the topology failed to start: ${(err as Error).message}\n`);
  await stop(1);
}
