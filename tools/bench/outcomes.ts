/**
 * The default mode's outcome benchmark (docs/benchmarks.md): how fast a create's outcome is
 * visible, side by side with the Temporal floors measured in the same run. It starts the
 * embedded stack (the simulated node refuses 150 ms after the pod is created), runs the floor
 * workflows (tools/bench/floor-workflows.ts) on a worker of its own against the stack's dev
 * server, and measures over HTTP:
 *
 *   - floors: one failing activity, and the create's former shape with no-op activities, to
 *     the client seeing the workflow failed, each run timed twice: from its refusal (its
 *     activity's throw: the moment the product is timed from, so the goals use it) and from the
 *     start call; 1 at a time (20 runs), 10 and 100 at once;
 *   - the product, refusal (disk 300 on a template whose floor is still unknown, so the node
 *     refuses it): from the refusal event (the bench's own events watch) to the operation
 *     showing `failed` (long-poll `GET /v1/operations/{id}?wait=30s`), 1 at a time, 10 and 100
 *     at once, and open loop at 20 creates/s for 30 s; to the synchronous route's 400, 1 at a
 *     time;
 *   - 50 successful creates (disk 2048) at once: latency to done and creates per second;
 *   - `GET /v1/operations/{id}` latency at 1,000 requests/s for 5 s (open loop);
 *   - peak RSS of the stack process (VmHWM), in MiB.
 *
 * `--quick` runs smaller counts (a smoke run; its figures are not the issue's). Every create
 * must end as expected and no refused create may leave a pod (else a problem, exit 1); a missed
 * goal is reported in the table, not a failure.
 */
import {
  clientConnectionOptions,
  nativeConnectionOptions,
  type TemporalCredentials,
} from '../../src/config/temporal-connection.js';
import { fileURLToPath } from 'node:url';
import { Client, Connection } from '@temporalio/client';
import { Context as ActivityContext } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { Agent, fetch as undiciFetch } from 'undici';
import { podNameFor } from '../../src/kubernetes/pod-spec.js';
import type { FloorActivities, FloorExpiryActivities, FollowedBy } from './floor-workflows.js';
import {
  errorText,
  asyncCreate,
  atOnce,
  expectRefused,
  expectSyncRefused,
  isDone,
  oneAtATime,
  outcomeVisible,
  podCount,
  post,
  problems,
  sleep,
  startStack,
  summary,
  TOKEN,
  type BenchStack,
  type RefusalWatch,
  type Summary,
  watchRefusals,
} from './support.js';
import { waitUntil } from '../wait-until.js';

/** How many runs each stage makes. */
interface OutcomeCounts {
  oneAtATime: number;
  some: number;
  many: number;
  openLoopPerS: number;
  openLoopS: number;
  successes: number;
  getPerS: number;
  getS: number;
}

/** The counts. */
const FULL: OutcomeCounts = {
  oneAtATime: 20,
  some: 10,
  many: 100,
  openLoopPerS: 20,
  openLoopS: 30,
  successes: 50,
  getPerS: 1000,
  getS: 5,
};

/** `--quick`: a smoke run of every stage. */
const QUICK: OutcomeCounts = {
  oneAtATime: 5,
  some: 10,
  many: 20,
  openLoopPerS: 10,
  openLoopS: 3,
  successes: 10,
  getPerS: 500,
  getS: 1,
};

/** One row of the printed table. */
export interface OutcomeRow {
  run: string;
  stats: Summary;
  goal?: string;
  met?: boolean;
}

/** Starts `fn` at `perSecond` for `seconds` (open loop: a slow answer never delays the next). */
export async function openLoop(
  perSecond: number,
  seconds: number,
  fn: () => Promise<number>,
): Promise<{ runs: number[]; wallMs: number }> {
  const startedAtMs = performance.now();
  const pending: Array<Promise<number>> = [];
  for (let i = 0; i < perSecond * seconds; i++) {
    const waitMs = startedAtMs + (i * 1000) / perSecond - performance.now();
    if (waitMs > 1) await sleep(waitMs);
    pending.push(fn());
  }
  const runs = await Promise.all(pending);
  return { runs, wallMs: performance.now() - startedAtMs };
}

let runtimeInstalled = false;

/**
 * One floor run's times, in ms, both ending when the client sees the workflow's result:
 * `fromStartMs` from the start call; `fromMarkMs` from the floor's own "refusal" (the moment
 * its `refuse` activity threw, or for a floor without one, its `step` returned), the moment
 * the product's figures are timed from (the refusal event), so the two compare like with like.
 */
export interface FloorTiming {
  fromStartMs: number;
  fromMarkMs: number;
}

/** The two summaries of a batch of floor runs: from the mark (like for like) and from the start. */
export function floorSummaries(runs: FloorTiming[]): { fromMark: Summary; fromStart: Summary } {
  return {
    fromMark: summary(runs.map((r) => r.fromMarkMs)),
    fromStart: summary(runs.map((r) => r.fromStartMs)),
  };
}

/**
 * The floor worker and client on the stack's dev server (tools/bench/floor-workflows.ts).
 * The worker runs in this process, so the activities' marks and the client's clock are one
 * `performance.now()`.
 * @returns `run(workflowType)`: its {@link FloorTiming} (failed or not; for a floor that
 *   returns {@link FollowedBy}, such as the expiry's, when the workflow it started has closed
 *   too), and `stop`
 */
export async function startFloors(temporalAddress: string, credentials: TemporalCredentials = {}) {
  const taskQueue = `bench-floor-${process.pid}-${Date.now()}`;
  // The floors fail on purpose: keep the SDK's warnings about it out of the table's way.
  if (!runtimeInstalled) Runtime.install({ logger: new DefaultLogger('ERROR') });
  runtimeInstalled = true;
  const nativeConnection = await NativeConnection.connect(
    nativeConnectionOptions(temporalAddress, credentials),
  );
  // Workflow id -> performance.now() of its mark: a refusal always (re)marks, a step only
  // when nothing marked the run yet (the create shape's compensation steps come after it).
  const marks = new Map<string, number>();
  const workflowId = () => ActivityContext.current().info.workflowExecution?.workflowId ?? '';
  let deletes = 0;
  const activities: FloorActivities & FloorExpiryActivities = {
    async startDeleteShape() {
      const context = ActivityContext.current();
      const id = `${context.info.workflowExecution?.workflowId ?? 'floor'}-delete-${deletes++}`;
      await context.client.workflow.start('floorDeleteShape', { taskQueue, workflowId: id });
      return id;
    },
    async step() {
      if (!marks.has(workflowId())) marks.set(workflowId(), performance.now());
    },
    async refuse() {
      marks.set(workflowId(), performance.now());
      throw ApplicationFailure.nonRetryable('refused', 'InvalidRequest');
    },
  };
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue,
    workflowsPath: fileURLToPath(new URL('./floor-workflows.ts', import.meta.url)),
    activities,
  });
  const running = worker.run();
  const connection = await Connection.connect(
    clientConnectionOptions(temporalAddress, credentials),
  );
  const client = new Client({ connection, namespace: 'default' });
  let seq = 0;
  const run = async (workflowType: string): Promise<FloorTiming> => {
    const id = `bench-floor-${process.pid}-${seq++}`;
    const startedAtMs = performance.now();
    const handle = await client.workflow.start(workflowType, { taskQueue, workflowId: id });
    const result = (await handle.result().catch(() => undefined)) as FollowedBy | undefined;
    if (result?.followedBy)
      await client.workflow
        .getHandle(result.followedBy)
        .result()
        .catch(() => undefined);
    const endedAtMs = performance.now();
    const markedAtMs = marks.get(id);
    marks.delete(id);
    return {
      fromStartMs: endedAtMs - startedAtMs,
      fromMarkMs: markedAtMs === undefined ? NaN : endedAtMs - markedAtMs,
    };
  };
  return {
    run,
    async stop() {
      worker.shutdown();
      await running;
      await connection.close();
      await nativeConnection.close();
    },
  };
}

/** One line as each stage ends, so a long run shows where it is. */
function progress(stage: string, stats: Summary): void {
  console.log(`  ${stage.padEnd(24)} p50 ${stats.p50} ms, p95 ${stats.p95} ms (n ${stats.n})`);
}

/** Prints the rows as a Markdown table (docs/benchmarks.md's). */
function printTable(rows: OutcomeRow[]): void {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`;
  console.log(line(['run', 'n', 'p50 ms', 'p95 ms', 'max ms', 'goal', 'met']));
  console.log(line(['---', '---:', '---:', '---:', '---:', '---', '---']));
  for (const row of rows) {
    console.log(
      line([
        row.run,
        String(row.stats.n),
        row.stats.p50.toLocaleString('en-US'),
        row.stats.p95.toLocaleString('en-US'),
        row.stats.max.toLocaleString('en-US'),
        row.goal ?? '',
        row.met === undefined ? '' : row.met ? 'yes' : 'no',
      ]),
    );
  }
}

/** ms from the refusal of `podName` (as the watch saw it) to `atMs`; NaN if never seen. */
function sinceRefusal(refusals: RefusalWatch, podName: string | undefined, atMs: number): number {
  const seenAtMs = podName === undefined ? undefined : refusals.seenAtMs(podName);
  return seenAtMs === undefined ? NaN : atMs - seenAtMs;
}

/**
 * Starts what the benchmark runs on, with a catalog of `freshTemplates` fresh templates and a
 * node that answers 150 ms after a pod is created: the embedded stack by default
 * (tools/bench/support.ts `startStack`), or the production topology
 * (tools/bench/topology.ts).
 */
export type OutcomeTarget = (freshTemplates: number) => Promise<BenchStack>;

/** The embedded stack; its simulated node refuses 150 ms after the pod is created, as in the measurements. */
const embeddedStack: OutcomeTarget = (freshTemplates) =>
  startStack({ env: { SIMULATED_NODE_DELAY_MS: '150' }, freshTemplates });

/**
 * Runs the outcome benchmark on a stack of its own and prints its table.
 * @param quick the smaller counts of `--quick`
 * @param start what to run on (default: the embedded stack)
 * @returns the table's rows, success throughput (creates/s), GET rate (requests/s), peak RSS
 *   (MiB), for the results file; failed checks go to `problems`
 */
export async function measureOutcomes(
  quick: boolean,
  start: OutcomeTarget = embeddedStack,
): Promise<Record<string, unknown>> {
  const counts = quick ? QUICK : FULL;
  const refusalsNeeded = 1 + 2 * counts.oneAtATime + counts.some + counts.many;
  const stack = await start(refusalsNeeded + counts.openLoopPerS * counts.openLoopS);
  const { base } = stack;
  let floors: Awaited<ReturnType<typeof startFloors>> | undefined;
  let refusals: RefusalWatch | undefined;
  try {
    if (!stack.temporalAddress) throw new Error("no Temporal address in the stack's banner");
    floors = await startFloors(stack.temporalAddress, stack.temporalCredentials);
    const watch = await watchRefusals(stack.kubeConfig());
    refusals = watch;
    console.log(`stack up at ${base} (pid ${stack.pid}), Temporal ${stack.temporalAddress}`);
    const refused = { diskMib: 300, template: '' };
    const longPoll = { longPoll: true } as const;
    expectRefused(
      (await asyncCreate(base, { ...refused, template: stack.fresh.take() }, isDone, longPoll)).op,
    );
    await floors.run('floorOneFailingActivity');
    await floors.run('floorCreateShape');

    const refusal = async (): Promise<number> => {
      try {
        const template = stack.fresh.take();
        const { atMs, op } = await asyncCreate(
          base,
          { ...refused, template },
          outcomeVisible,
          longPoll,
        );
        expectRefused(op);
        return sinceRefusal(watch, podNameFor(op.sandbox_id, 1), atMs);
      } catch (err) {
        problems.push(`refused create: ${errorText(err)}`);
        return NaN;
      }
    };
    const syncRefusal = async (): Promise<number> => {
      const result = await post(base, '/sync/v1/sandboxes', {
        ...refused,
        template: stack.fresh.take(),
      });
      expectSyncRefused(result);
      let podName: string | undefined;
      try {
        podName = (JSON.parse(result.text) as { error?: { details?: { pod_name?: string } } }).error
          ?.details?.pod_name;
      } catch {
        podName = undefined;
      }
      return sinceRefusal(watch, podName, result.atMs);
    };
    const oneActivity = () => floors!.run('floorOneFailingActivity');
    const createShape = () => floors!.run('floorCreateShape');

    const { oneAtATime: one, some, many } = counts;
    const s: Record<string, Summary> = {};
    const stage = async (key: string, label: string, runs: Promise<number[]>) => {
      s[key] = summary(await runs);
      progress(label, s[key]);
      return s[key];
    };
    // A floor stage keeps both timings of the same runs: `<key>` from the floor's refusal
    // (like the product's figures), `<key>FromStart` from the start call.
    const floorStage = async (key: string, label: string, runs: Promise<FloorTiming[]>) => {
      const { fromMark, fromStart } = floorSummaries(await runs);
      s[key] = fromMark;
      s[`${key}FromStart`] = fromStart;
      progress(`${label} (refusal)`, fromMark);
      progress(`${label} (start)`, fromStart);
      return fromMark;
    };
    const floor1 = await floorStage('floor1', 'floor 1', oneAtATime(one, oneActivity));
    await floorStage('shape1', 'shape 1', oneAtATime(one, createShape));
    const product1 = await stage('product1', 'product 1', oneAtATime(one, refusal));
    const sync1 = await stage('sync1', 'sync 1', oneAtATime(one, syncRefusal));
    await floorStage('floorSome', `floor ${some}`, atOnce(some, oneActivity));
    await floorStage('shapeSome', `shape ${some}`, atOnce(some, createShape));
    await stage('productSome', `product ${some}`, atOnce(some, refusal));
    const floorMany = await floorStage('floorMany', `floor ${many}`, atOnce(many, oneActivity));
    await floorStage('shapeMany', `shape ${many}`, atOnce(many, createShape));
    const productMany = await stage('productMany', `product ${many}`, atOnce(many, refusal));
    const open = await openLoop(counts.openLoopPerS, counts.openLoopS, refusal);
    await stage('open', `open loop ${counts.openLoopPerS}/s`, Promise.resolve(open.runs));

    const successStartedAtMs = performance.now();
    const successes = await Promise.all(
      Array.from({ length: counts.successes }, () =>
        asyncCreate(base, { diskMib: 2048, template: 'base' }, isDone, longPoll),
      ),
    );
    const successWallMs = performance.now() - successStartedAtMs;
    for (const { op } of successes) {
      if (op.status !== 'succeeded')
        problems.push(`operation ${op.id} ended ${op.status}, expected succeeded`);
    }
    s.success = summary(successes.map((r) => r.ms));
    const throughputPerS = Math.round((counts.successes / (successWallMs / 1000)) * 10) / 10;

    const readId = successes[0]?.op.id;
    // Keep-alive connections, as a client at 1,000 requests/s would hold; a request waiting
    // for a free connection counts that wait in its latency.
    const readAgent = new Agent({ connections: 64, keepAliveTimeout: 30_000 });
    const reads = await openLoop(counts.getPerS, counts.getS, async () => {
      const startedAtMs = performance.now();
      try {
        const response = await undiciFetch(`${base}/v1/operations/${readId}`, {
          headers: { authorization: `Bearer ${TOKEN}` },
          dispatcher: readAgent,
        });
        await response.arrayBuffer();
        if (response.status !== 200) problems.push(`GET operation answered ${response.status}`);
      } catch (err) {
        problems.push(`GET operation failed: ${errorText(err)}`);
      }
      return performance.now() - startedAtMs;
    });
    await readAgent.close();
    const get = await stage(
      'get',
      `GET operation at ${counts.getPerS}/s`,
      Promise.resolve(reads.runs),
    );
    const readRatePerS = Math.round(reads.runs.length / (reads.wallMs / 1000));

    // Compensation finishes after the outcome is visible: wait until no refused pod is left.
    let podsLeft = -1;
    await waitUntil(async () => (podsLeft = await podCount(stack)) === counts.successes, {
      timeoutMs: 60_000,
      intervalMs: 200,
      what: 'only the running pods left',
    }).catch(() =>
      problems.push(`${podsLeft} pods left, expected the ${counts.successes} running ones`),
    );
    const peakRssMib = stack.peakRssMib();

    const floorGoal = `p50 <= 1.5x one-activity floor (${Math.round(1.5 * floor1.p50)})`;
    // Each floor twice: from its refusal (what the goals compare with) and from its start.
    const floorRows = (key: string, run: string): OutcomeRow[] => [
      { run: `${run}, from its refusal`, stats: s[key]! },
      { run: `${run}, from the start call`, stats: s[`${key}FromStart`]! },
    ];
    const rows: OutcomeRow[] = [
      ...floorRows('floor1', 'floor: one failing activity, 1 at a time'),
      ...floorRows('shape1', 'floor: create shape, no-op activities, 1 at a time'),
      {
        run: 'product: refusal event -> GET shows failed, 1 at a time',
        stats: product1,
        goal: floorGoal,
        met: product1.p50 <= 1.5 * floor1.p50,
      },
      {
        run: 'product: refusal event -> sync 400, 1 at a time',
        stats: sync1,
        goal: floorGoal,
        met: sync1.p50 <= 1.5 * floor1.p50,
      },
      ...floorRows('floorSome', `floor: one failing activity, ${some} at once`),
      ...floorRows('shapeSome', `floor: create shape, ${some} at once`),
      { run: `product: refusal, ${some} at once`, stats: s.productSome! },
      ...floorRows('floorMany', `floor: one failing activity, ${many} at once`),
      ...floorRows('shapeMany', `floor: create shape, ${many} at once`),
      {
        run: `product: refusal, ${many} at once`,
        stats: productMany,
        goal: `p50 <= 3x one-activity floor from its refusal (${Math.round(3 * floorMany.p50)}), p95 <= 2000`,
        met: productMany.p50 <= 3 * floorMany.p50 && productMany.p95 <= 2000,
      },
      {
        run: `product: refusal, open loop ${counts.openLoopPerS}/s for ${counts.openLoopS} s`,
        stats: s.open!,
      },
      {
        run: `product: ${counts.successes} successful creates at once (${throughputPerS}/s)`,
        stats: s.success,
      },
      {
        run: `GET operation at ${readRatePerS} requests/s (open loop, ${counts.getS} s)`,
        stats: get,
        goal: 'p50 <= 5',
        met: get.p50 <= 5,
      },
    ];
    console.log('');
    printTable(rows);
    console.log(
      `\nsuccess throughput: ${throughputPerS} creates/s; stack peak RSS ${peakRssMib} MiB`,
    );
    return {
      counts,
      rows,
      successThroughputPerS: throughputPerS,
      getRatePerS: readRatePerS,
      peakRssMib,
    };
  } finally {
    refusals?.stop();
    await floors?.stop().catch(() => undefined);
    await stack.stop();
  }
}
