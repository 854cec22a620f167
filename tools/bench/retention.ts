/**
 * `npm run bench -- retention`: what a purge of a large backlog costs creates
 * (docs/benchmarks.md, "Retention"; issue 48), on SQLite and on PostgreSQL (`BENCH_DATABASE_URL`,
 * else `TEST_DATABASE_URL`, else `DATABASE_URL`; without one, SQLite alone), each in a fresh
 * database migrated by the store (PostgreSQL: a schema dropped at the end).
 *
 * Seeded directly: `BENCH_RETENTION_ROWS` finished rows (default 100,000; `--quick` 5,000):
 * that many `failed` sandboxes (with their execution) and their finished create operations, 60
 * days old. Then the store's create transaction (`store.createSandbox`, what every create
 * commits), one at a time for `BENCH_RETENTION_SECONDS` (default 20; `--quick` 3): creates/s
 * with nothing else running, then again while the retention purge (src/store/retention.ts, batches
 * of `RETENTION_BATCH_SIZE`, default 1,000) deletes the backlog batch after batch, as the
 * scheduled activity does. Reported: creates/s and the create's p50/p95/max ms, each way; the
 * purge's rows/s and batch p50/p95/max ms. Checked: the purge removed exactly the backlog and
 * no create's row. The figures of a loaded machine are not results.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { sql, type Insertable } from 'kysely';
import { DEFAULT_RETENTION_BATCH_SIZE } from '../../src/config/retention.js';
import { openDatabase } from '../../src/store/database.js';
import { openStore, type StoreOptions } from '../../src/store/index.js';
import type { ExecutionsTable, OperationsTable, SandboxesTable } from '../../src/store/schema.js';
import { benchDatabaseUrl, createBenchSchema } from './postgres-schema.js';
import { problems, stamp, summary, type Summary } from './support.js';

const DAY_MS = 86_400_000;

/** Inserts `count` old failed sandboxes, their executions and finished creates, in batches. */
async function seed(options: StoreOptions, count: number, atMs: number): Promise<void> {
  const { db } = openDatabase(options);
  const batch = 500;
  try {
    for (let from = 0; from < count; from += batch) {
      const sandboxes: Insertable<SandboxesTable>[] = [];
      const executions: Insertable<ExecutionsTable>[] = [];
      const operations: Insertable<OperationsTable>[] = [];
      for (let i = from; i < Math.min(count, from + batch); i++) {
        const id = `sbx_old_${String(i).padStart(20, '0')}`;
        const operationId = `op_old_${String(i).padStart(20, '0')}`;
        const at = new Date(atMs + i).toISOString();
        sandboxes.push({
          id,
          tenant: `tenant-${i % 10}`,
          template: 'base',
          cpu: 1,
          cpu_millicores: 1000,
          memory_mib: 1024,
          disk_mib: 2048,
          state: 'failed',
          generation: 1,
          operation_id: operationId,
          pod_name: null,
          pod_uid: null,
          pod_ip: null,
          failure_code: 'pod_failed',
          failure_message: 'seeded',
          created_at: at,
          updated_at: at,
          ttl_ms: null,
          running_at: null,
          expire_time: null,
          labels: null,
        });
        executions.push({
          sandbox_id: id,
          generation: 1,
          activation_attempt: 1,
          state: 'retired',
          retired_reason: 'pod_failed',
          retired_at: at,
          created_at: at,
        });
        operations.push({
          id: operationId,
          type: 'sandbox.create',
          tenant: `tenant-${i % 10}`,
          sandbox_id: id,
          status: 'failed',
          phase: 'finished',
          error_code: 'pod_failed',
          error_message: 'seeded',
          error_details: null,
          workflow_id: operationId,
          run_id: null,
          deadline_at: null,
          placements: null,
          trace_id: null,
          result_sandbox: null,
          created_at: at,
          updated_at: at,
          cause: null,
          end_time: at,
        });
      }
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('sandboxes').values(sandboxes).execute();
        await trx.insertInto('executions').values(executions).execute();
        await trx.insertInto('operations').values(operations).execute();
      });
    }
  } finally {
    await db.destroy();
  }
}

interface CreateFigures {
  creates: number;
  creates_per_second: number;
  create_ms: Summary;
}

interface BackendFigures {
  backlog_rows: number;
  without_purge: CreateFigures;
  with_purge: CreateFigures & {
    purged_rows: number;
    purge_rows_per_second: number;
    purge_batch_ms: Summary;
    /** Whether the purge was still running when the window closed. */
    purge_ran_whole_window: boolean;
  };
}

async function measureBackend(
  name: string,
  options: StoreOptions,
  rows: number,
  seconds: number,
  batchSize: number,
  afterSeed: () => Promise<void>,
): Promise<BackendFigures> {
  const nowMs = Date.now();
  // Opened (and so migrated) first; the seed writes beside it.
  const store = await openStore(options);
  console.log(`${stamp()} ${name}: seeding ${rows} finished sandboxes and operations`);
  await seed(options, rows, nowMs - 60 * DAY_MS);
  await afterSeed();
  let n = 0;
  /** Creates one at a time until `until()` says stop; their durations in ms. */
  async function creates(until: () => boolean): Promise<CreateFigures> {
    const durations: number[] = [];
    const startedMs = performance.now();
    while (!until()) {
      n += 1;
      const t0 = performance.now();
      const outcome = await store.createSandbox({
        id: `sbx_new_${randomUUID()}`,
        tenant: 'acme',
        template: 'base',
        resources: { cpu: 1, memoryMib: 1024, diskMib: 2048 },
        operationId: `op_new_${n}_${randomUUID()}`,
      });
      durations.push(performance.now() - t0);
      if (outcome.kind !== 'created') problems.push(`${name}: a create was ${outcome.kind}`);
    }
    const elapsedS = (performance.now() - startedMs) / 1000;
    return {
      creates: durations.length,
      creates_per_second: Math.round((durations.length / elapsedS) * 10) / 10,
      create_ms: summary(durations),
    };
  }
  try {
    const windowMs = seconds * 1000;
    let endAt = performance.now() + windowMs;
    const without = await creates(() => performance.now() >= endAt);
    console.log(`${stamp()} ${name}: ${without.creates_per_second} creates/s without a purge`);

    const before = new Date(nowMs - 30 * DAY_MS).toISOString();
    const batchMs: number[] = [];
    let purged = 0;
    let purging = true;
    const purgeStartedMs = performance.now();
    const purge = (async () => {
      for (const kind of ['sandboxes', 'operations'] as const) {
        for (;;) {
          const t0 = performance.now();
          const deleted = await store.retention.purgeBatch(kind, before, batchSize);
          batchMs.push(performance.now() - t0);
          purged += deleted;
          if (deleted < batchSize) break;
        }
      }
      purging = false;
    })();
    endAt = performance.now() + windowMs;
    const during = await creates(() => performance.now() >= endAt || !purging);
    const ranWholeWindow = purging;
    await purge;
    const purgeS = (performance.now() - purgeStartedMs) / 1000;
    if (purged !== rows * 2) problems.push(`${name}: purged ${purged} rows, expected ${rows * 2}`);
    const { db } = openDatabase(options);
    try {
      const left = await sql<{ n: number | string }>`
        select count(*) as n from sandboxes where id like 'sbx_new_%'`.execute(db);
      const made = without.creates + during.creates;
      if (Number(left.rows[0]?.n) !== made) {
        problems.push(`${name}: ${left.rows[0]?.n} new sandboxes kept, expected ${made}`);
      }
    } finally {
      await db.destroy();
    }
    console.log(
      `${stamp()} ${name}: ${during.creates_per_second} creates/s while purging ` +
        `(${Math.round(purged / purgeS)} rows/s)${ranWholeWindow ? '' : '; the purge ended first'}`,
    );
    return {
      backlog_rows: rows * 2,
      without_purge: without,
      with_purge: {
        ...during,
        purged_rows: purged,
        purge_rows_per_second: Math.round(purged / purgeS),
        purge_batch_ms: summary(batchMs),
        purge_ran_whole_window: ranWholeWindow,
      },
    };
  } finally {
    await store.close();
  }
}

/** The retention rows of the benchmark on SQLite, and on PostgreSQL when a URL is given. */
export async function measureRetention(quick: boolean): Promise<Record<string, unknown>> {
  const rows = Number(process.env.BENCH_RETENTION_ROWS ?? (quick ? 5_000 : 100_000));
  const seconds = Number(process.env.BENCH_RETENTION_SECONDS ?? (quick ? 3 : 20));
  const batchSize = Number(process.env.RETENTION_BATCH_SIZE ?? DEFAULT_RETENTION_BATCH_SIZE);
  const results: Record<string, unknown> = { rows, seconds, batch_size: batchSize };
  const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-bench-retention-'));
  try {
    results.sqlite = await measureBackend(
      'sqlite',
      { sqliteFile: join(dir, 'store.sqlite') },
      rows,
      seconds,
      batchSize,
      async () => {},
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const url = benchDatabaseUrl();
  if (!url) {
    results.postgres = 'not measured: set BENCH_DATABASE_URL (or TEST_DATABASE_URL)';
    return results;
  }
  const schema = await createBenchSchema(url, 'bench_retention');
  try {
    results.postgres = await measureBackend(
      'postgres',
      { databaseUrl: schema.databaseUrl },
      rows,
      seconds,
      batchSize,
      () => schema.analyze(['sandboxes', 'executions', 'operations']),
    );
  } finally {
    await schema.drop();
  }
  return results;
}
