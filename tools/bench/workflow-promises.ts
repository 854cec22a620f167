/**
 * How many promises the workflow sandbox makes per create (issue 50): the Temporal TypeScript
 * SDK captures and formats a stack trace for every promise created in workflow code (1.24,
 * `@temporalio/worker` lib/workflow/vm-shared.js, `setPromiseHook`), so each one costs the
 * worker CPU on every create.
 *
 *     npx tsx tools/bench/workflow-promises.ts
 *
 * Replays, one at a time, the histories of a refused create, a cold create that succeeds and a
 * warm claim recorded by the release before (test/fixtures/<RELEASE_BEFORE>/; today's workflow
 * code must replay them, test/replay.test.ts), then the same kinds' no-op floors
 * (tools/bench/floor-workflows.ts: `floorRefusalShape`, `floorCreateSuccessShape`,
 * `floorWarmClaimShape`), whose histories it records first on a dev server of its own
 * (environments/dev-server/dev-server.ts). Each replay runs in this thread (a replay worker is in
 * debug mode) under a `v8.promiseHooks` counter that counts the promises the SDK's own hook
 * would: those made in a workflow's context. The creates replay with the production bundle
 * (interceptors and failure converter included), the floors with theirs, as `npm run bench`
 * runs them.
 *
 * Prints one line per history and then one JSON line
 * `{ refused: {create, floor}, cold: {create, floor}, warm: {create, floor} }`, in promises.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promiseHooks } from 'node:v8';
import { Client, Connection } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils.js';
import type { temporal } from '@temporalio/proto';
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

type History = temporal.api.history.v1.IHistory;

/** Each create kind: its fixture (test/fixtures/<commit>/<name>.history.json) and its floor. */
const KINDS = {
  refused: { fixture: 'create-sandbox-invalid-request', floor: 'floorRefusalShape' },
  cold: { fixture: 'create-sandbox-running', floor: 'floorCreateSuccessShape' },
  warm: { fixture: 'create-sandbox-warm-claim', floor: 'floorWarmClaimShape' },
} as const;

type Kind = keyof typeof KINDS;

const FLOOR_WORKFLOWS_PATH = fileURLToPath(new URL('./floor-workflows.ts', import.meta.url));

/**
 * Counts the promises created in a workflow's context from now until `stop()`: those whose
 * realm has a `__TEMPORAL_ACTIVATOR__`, the test the SDK's own promise hook makes
 * (vm-shared.js `getActivator`). Promises of the worker itself are left out.
 * @returns `stop()`, which removes the hook, and `count()`, the promises counted so far
 */
export function countWorkflowPromises(): { stop(): void; count(): number } {
  let count = 0;
  const stopHook = promiseHooks.onInit((promise) => {
    const realmFunction = promise.constructor.constructor as FunctionConstructor;
    if (realmFunction('return globalThis.__TEMPORAL_ACTIVATOR__')() !== undefined) count += 1;
  });
  return { stop: () => stopHook(), count: () => count };
}

/**
 * Replays `history` with `bundle` in this thread and counts its workflow's promises.
 * @returns the count
 * @throws DeterminismViolationError when the code does not replay the history
 */
async function promisesOfReplay(bundle: { code: string }, history: History): Promise<number> {
  const counter = countWorkflowPromises();
  try {
    await Worker.runReplayHistory({ workflowBundle: bundle }, history);
  } finally {
    // The hook never outlives the replay, whether it replays or not.
    counter.stop();
  }
  return counter.count();
}

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
