/**
 * How many promises the workflow sandbox makes per create (issue 50), beside the same kinds'
 * no-op floors: the SDK captures a stack trace for each (tools/bench/workflow-promise-count.ts).
 *
 *     npx tsx tools/bench/workflow-promises.ts
 *
 * Replays, one at a time, the histories of a refused create, a cold create that succeeds and a
 * warm claim recorded by the release before (test/fixtures/<RELEASE_BEFORE>/; today's workflow
 * code must replay them, test/replay.test.ts), then the same kinds' no-op floors
 * (tools/bench/floor-workflows.ts: `floorRefusalShape`, `floorCreateSuccessShape`,
 * `floorWarmClaimShape`), whose histories it records first on a dev server of its own
 * (environments/dev-server/dev-server.ts). Each replay runs in this thread under a
 * `v8.promiseHooks` counter that counts the promises the SDK's own hook would: those made in a
 * workflow's context (tools/bench/workflow-promise-count.ts). The creates replay with the
 * production bundle (interceptors and failure converter included), the floors with theirs, as
 * `npm run bench` runs them.
 *
 * Prints one line per history and then one JSON line
 * `{ refused: {create, floor}, cold: {create, floor}, warm: {create, floor} }`, in promises.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
} from '@temporalio/worker';
import { startDevServer } from '../../environments/dev-server/dev-server.js';
import { bundleSandboxWorkflows } from '../../src/worker/workflow-bundle.js';
import { fixtureDir, releaseBeforeCommit } from '../release-before.js';
import type { FloorActivities } from './floor-workflows.js';
import { promisesOfReplay, type History } from './workflow-promise-count.js';

/** Each create kind: its fixture (test/fixtures/<commit>/<name>.history.json) and its floor. */
const KINDS = {
  refused: { fixture: 'create-sandbox-invalid-request', floor: 'floorRefusalShape' },
  cold: { fixture: 'create-sandbox-running', floor: 'floorCreateSuccessShape' },
  warm: { fixture: 'create-sandbox-warm-claim', floor: 'floorWarmClaimShape' },
} as const;

type Kind = keyof typeof KINDS;

const FLOOR_WORKFLOWS_PATH = fileURLToPath(new URL('./floor-workflows.ts', import.meta.url));

/**
 * Runs each floor once on a dev server of its own, with no-op activities (`refuse` fails, as
 * tools/bench/outcomes.ts's does), and returns its history by workflow type.
 */
async function recordFloorHistories(): Promise<Map<string, History>> {
  const devServer = await startDevServer({ ui: false });
  const nativeConnection = await NativeConnection.connect({ address: devServer.address });
  const connection = await Connection.connect({ address: devServer.address });
  try {
    const client = new Client({ connection });
    const taskQueue = `workflow-promises-${process.pid}`;
    const activities: FloorActivities = {
      async step() {},
      async refuse() {
        throw ApplicationFailure.nonRetryable('refused', 'InvalidRequest');
      },
    };
    const worker = await Worker.create({
      connection: nativeConnection,
      taskQueue,
      workflowsPath: FLOOR_WORKFLOWS_PATH,
      activities,
    });
    const histories = new Map<string, History>();
    await worker.runUntil(async () => {
      for (const { floor } of Object.values(KINDS)) {
        const handle = await client.workflow.start(floor, {
          taskQueue,
          workflowId: `${floor}-${process.pid}`,
        });
        await handle.result().catch(() => undefined);
        histories.set(floor, await handle.fetchHistory());
      }
    });
    return histories;
  } finally {
    await connection.close();
    await nativeConnection.close();
    await devServer.stop();
  }
}

async function main(): Promise<void> {
  // The refused floor and fixture fail on purpose: keep the SDK's warnings out of the table.
  Runtime.install({ logger: new DefaultLogger('ERROR') });
  const [createBundle, floorBundle, floorHistories] = await Promise.all([
    bundleSandboxWorkflows(),
    bundleWorkflowCode({
      workflowsPath: FLOOR_WORKFLOWS_PATH,
      logger: { info() {}, warn() {}, error() {}, debug() {}, trace() {}, log() {} },
    }),
    recordFloorHistories(),
  ]);
  const dir = fixtureDir(releaseBeforeCommit());
  const counts = {} as Record<Kind, { create: number; floor: number }>;
  for (const [kind, { fixture, floor }] of Object.entries(KINDS) as [
    Kind,
    (typeof KINDS)[Kind],
  ][]) {
    const history = historyFromJSON(
      JSON.parse(readFileSync(join(dir, `${fixture}.history.json`), 'utf8')),
    );
    const create = await promisesOfReplay(createBundle, history);
    const floorCount = await promisesOfReplay(floorBundle, floorHistories.get(floor)!);
    console.log(`${kind.padEnd(8)} ${fixture}: ${create} promises; ${floor}: ${floorCount}`);
    counts[kind] = { create, floor: floorCount };
  }
  console.log(JSON.stringify(counts));
}

await main();
