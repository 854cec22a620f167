/**
 * `npm run bench -- notify`: what the operation notifier's `pg_notify` costs PostgreSQL
 * (docs/production.md, "Operation notifications on PostgreSQL"). Every notifying commit takes
 * one database-wide lock on the notification queue from its pre-commit step until its commit
 * record is flushed (PostgreSQL, src/backend/commands/async.c, PreCommit_Notify), so notifying
 * commits cannot share a WAL flush the way other concurrent commits do.
 *
 * On the PostgreSQL of `BENCH_DATABASE_URL` (else `TEST_DATABASE_URL`, else `DATABASE_URL`), in
 * a fresh schema migrated by the store and dropped at the end, with the operation rows of real
 * creates (`store.createSandbox`), it runs the transaction the store runs for each operation
 * update: `begin; update operations ... where id = $1; [select pg_notify(channel, id)]; commit`,
 * from a pool of `BENCH_NOTIFY_WRITERS` connections (default 16; each store process holds a
 * pool of POSTGRES_POOL_SIZE, 10), with `BENCH_NOTIFY_LISTENERS` connections LISTENing (default
 * 4: two API replicas, two workers), three ways: without any notification, with
 * `pg_notify` inside the transaction (the release before), and through the store's coalescing
 * notifier after the commit (this release, src/store/operation-notifier.ts):
 *
 *   - ceiling: every writer commits back to back for `BENCH_NOTIFY_SECONDS` (default 10);
 *     commits/s and commit latency p50/p99;
 *   - rates: an open loop at creates/s × `BENCH_NOTIFY_UPDATES` (default 3: a create that fails
 *     after its pod was created writes recordPod, recordOperationOutcome, retireExecution; one
 *     that succeeds writes 2) for each rate of `BENCH_NOTIFY_CREATES` (default 20,50,100,200);
 *     latency is measured from the scheduled start (a backlog shows as latency), plus the
 *     delivery latency commit → a listener's notification.
 *
 * Every notification sent must reach a listener (else a problem, exit 1).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import {
  createOperationNotifier,
  LEGACY_OPERATION_CHANNEL,
  OPERATION_CHANNEL,
  type OperationNotifier,
} from '../../src/store/operation-notifier.js';
import { openStore } from '../../src/store/index.js';
import { benchDatabaseUrl, createBenchSchema } from './postgres-schema.js';
import { problems, sleep } from './support.js';

const SECONDS = Number(process.env.BENCH_NOTIFY_SECONDS ?? 10);
const WRITERS = Number(process.env.BENCH_NOTIFY_WRITERS ?? 16);
const LISTENERS = Number(process.env.BENCH_NOTIFY_LISTENERS ?? 4);
const UPDATES_PER_CREATE = Number(process.env.BENCH_NOTIFY_UPDATES ?? 3);
const CREATE_RATES = (process.env.BENCH_NOTIFY_CREATES ?? '20,50,100,200').split(',').map(Number);
const OPERATIONS = 2_000;

/** Latency percentiles in ms. */
interface Percentiles {
  n: number;
  p50: number;
  p99: number;
  max: number;
}

function percentiles(values: number[]): Percentiles {
  const sorted = [...values].sort((a, b) => a - b);
  const at = (q: number) =>
    Math.round(
      (sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)] ?? NaN) * 100,
    ) / 100;
  return { n: sorted.length, p50: at(0.5), p99: at(0.99), max: at(1) };
}

/**
 * How a commit announces itself: not at all (the floor), `pg_notify` inside the writing
 * transaction (the release before: a notifying commit per update), or through the store's
 * coalescing notifier after the commit (this release: src/store/operation-notifier.ts).
 */
type Variant = 'none' | 'in_transaction' | 'coalesced';
const VARIANTS: Variant[] = ['none', 'in_transaction', 'coalesced'];

/** One measured run. */
interface Run {
  notify: Variant;
  /** How many notifications PostgreSQL delivered to a listener (coalesced: batches). */
  notifications?: number;
  target_commits_per_s: number | 'max';
  commits_per_s: number;
  commit_ms: Percentiles;
  delivery_ms?: Percentiles;
}

interface Database {
  pool: pg.Pool;
  ids: string[];
  /** Receive times (performance.now()) of this run's notified ids, by id. */
  received: Map<string, number>;
  /** Notifications the listener got this run. */
  notifications: { count: number };
  /** The store's notifier, publishing over `pool` (the coalesced variant). */
  notifier: OperationNotifier;
  close(): Promise<void>;
}

async function openDatabase(url: string): Promise<Database> {
  const schema = await createBenchSchema(url, 'bench_notify');
  const store = await openStore({ databaseUrl: schema.databaseUrl });
  const ids: string[] = [];
  for (let i = 0; i < OPERATIONS; i++) {
    const suffix = randomUUID().replaceAll('-', '').slice(0, 20);
    const id = `op_${suffix}`;
    await store.createSandbox({
      id: `sbx_${suffix}`,
      tenant: 'bench',
      template: 'base',
      resources: { cpu: 1, memoryMib: 256, diskMib: 2048 },
      operationId: id,
    });
    ids.push(id);
  }
  await store.close();
  const pool = new pg.Pool({ connectionString: schema.databaseUrl, max: WRITERS });
  const received = new Map<string, number>();
  const notifications = { count: 0 };
  const listeners = await Promise.all(
    Array.from({ length: LISTENERS }, async (_, index) => {
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      await client.query(`LISTEN ${OPERATION_CHANNEL}; LISTEN ${LEGACY_OPERATION_CHANNEL}`);
      if (index === 0) {
        client.on('notification', (message) => {
          notifications.count += 1;
          const at = performance.now();
          for (const id of message.payload?.split(',') ?? []) received.set(id, at);
        });
      }
      return client;
    }),
  );
  // Warm the pool: every connection opened before the clock starts.
  const warm = await Promise.all(Array.from({ length: WRITERS }, () => pool.connect()));
  for (const client of warm) client.release();
  const notifier = createOperationNotifier({
    send: async (channel, payload) => {
      await pool.query('select pg_notify($1, $2)', [channel, payload]);
    },
  });
  return {
    pool,
    ids,
    received,
    notifications,
    notifier,
    async close() {
      await notifier.close();
      await pool.end();
      for (const client of listeners) await client.end();
      await schema.drop();
    },
  };
}

/**
 * The store's operation update: one transaction, announced as `variant` says. Each call
 * announces an id of its own (`<id>#<n>`), so deliveries can be matched to commits.
 * @returns performance.now() when the commit was acknowledged
 */
async function update(db: Database, n: number, notify: Variant): Promise<number> {
  const id = db.ids[n % db.ids.length] ?? '';
  const client = await db.pool.connect();
  try {
    await client.query('begin');
    await client.query('update operations set updated_at = $2 where id = $1', [
      id,
      new Date().toISOString(),
    ]);
    if (notify === 'in_transaction') {
      await client.query('select pg_notify($1, $2)', [LEGACY_OPERATION_CHANNEL, `${id}#${n}`]);
    }
    await client.query('commit');
    if (notify === 'coalesced') db.notifier.notify(`${id}#${n}`);
    return performance.now();
  } finally {
    client.release();
  }
}

/** Every writer back to back for SECONDS. */
async function ceiling(db: Database, notify: Variant): Promise<Run> {
  const latencies: number[] = [];
  let n = 0;
  const started = performance.now();
  const stopAt = started + SECONDS * 1000;
  await Promise.all(
    Array.from({ length: WRITERS }, async () => {
      while (performance.now() < stopAt) {
        const begun = performance.now();
        await update(db, n++, notify);
        latencies.push(performance.now() - begun);
      }
    }),
  );
  const elapsedS = (performance.now() - started) / 1000;
  return {
    notify,
    target_commits_per_s: 'max',
    commits_per_s: Math.round(latencies.length / elapsedS),
    commit_ms: percentiles(latencies),
  };
}

/** An open loop: commit n is due at n / rate; its latency counts from when it was due. */
async function atRate(db: Database, commitsPerS: number, notify: Variant): Promise<Run> {
  db.received.clear();
  db.notifications.count = 0;
  const total = Math.round(commitsPerS * SECONDS);
  const latencies: number[] = [];
  const deliveries: number[] = [];
  const committedAt = new Map<string, number>();
  const started = performance.now();
  const pending: Array<Promise<void>> = [];
  for (let n = 0; n < total; n++) {
    const due = started + (n * 1000) / commitsPerS;
    const wait = due - performance.now();
    if (wait > 1) await sleep(wait);
    pending.push(
      update(db, n, notify).then((done) => {
        latencies.push(done - due);
        committedAt.set(`${db.ids[n % db.ids.length]}#${n}`, done);
      }),
    );
  }
  await Promise.all(pending);
  const elapsedS = (performance.now() - started) / 1000;
  if (notify !== 'none') {
    const deliveredBy = performance.now() + 5_000;
    while (db.received.size < total && performance.now() < deliveredBy) await sleep(20);
    for (const [payload, at] of committedAt) {
      const seen = db.received.get(payload);
      if (seen !== undefined) deliveries.push(seen - at);
    }
    if (deliveries.length < total) {
      problems.push(`${total - deliveries.length} of ${total} notifications never arrived`);
    }
  }
  return {
    notify,
    target_commits_per_s: commitsPerS,
    commits_per_s: Math.round(total / elapsedS),
    commit_ms: percentiles(latencies),
    ...(notify !== 'none'
      ? { notifications: db.notifications.count, delivery_ms: percentiles(deliveries) }
      : {}),
  };
}

function show(run: Run, creates?: number): void {
  const delivery = run.delivery_ms
    ? `, ${run.notifications} notifications, delivery p50 ${run.delivery_ms.p50} / p99 ${run.delivery_ms.p99} ms`
    : '';
  console.log(
    `  ${run.notify.padEnd(14)} ${creates ? `${creates} creates/s -> ` : ''}` +
      `${run.target_commits_per_s} commits/s target: ${run.commits_per_s} commits/s, ` +
      `commit p50 ${run.commit_ms.p50} / p99 ${run.commit_ms.p99} / max ${run.commit_ms.max} ms${delivery}`,
  );
}

/** The mode: returns the results file's fields. */
export async function measureNotify(): Promise<Record<string, unknown>> {
  const url = benchDatabaseUrl();
  if (!url) {
    throw new Error('bench notify needs BENCH_DATABASE_URL (or TEST_DATABASE_URL) = postgres://…');
  }
  const db = await openDatabase(url);
  try {
    const settings = await db.pool.query<{ name: string; setting: string }>(
      `select name, setting from pg_settings
        where name in ('server_version', 'synchronous_commit', 'fsync', 'wal_sync_method', 'commit_delay')`,
    );
    console.log(
      `notify: ${WRITERS} writers, ${LISTENERS} listeners, ${SECONDS} s per run, ` +
        `${UPDATES_PER_CREATE} operation updates per create`,
    );
    const ceilings: Run[] = [];
    for (const notify of VARIANTS) {
      const run = await ceiling(db, notify);
      show(run);
      ceilings.push(run);
    }
    const rates: Array<Run & { creates_per_s: number }> = [];
    for (const creates of CREATE_RATES) {
      for (const notify of VARIANTS) {
        const run = await atRate(db, creates * UPDATES_PER_CREATE, notify);
        show(run, creates);
        rates.push({ creates_per_s: creates, ...run });
      }
    }
    return {
      postgres: Object.fromEntries(settings.rows.map((row) => [row.name, row.setting])),
      writers: WRITERS,
      listeners: LISTENERS,
      seconds_per_run: SECONDS,
      updates_per_create: UPDATES_PER_CREATE,
      ceiling: ceilings,
      rates,
    };
  } finally {
    await db.close();
  }
}
