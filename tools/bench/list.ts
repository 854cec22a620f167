/**
 * `npm run bench -- list`: how long one page of `GET /v1/sandboxes` takes the store at scale
 * (docs/benchmarks.md, "List pages"), on SQLite and on PostgreSQL (`BENCH_DATABASE_URL`, else
 * `TEST_DATABASE_URL`, else `DATABASE_URL`; without one, SQLite alone), each in a fresh database
 * migrated by the store (PostgreSQL: a schema dropped at the end).
 *
 * Seeded directly (multi-row INSERTs of `sandboxes` and `sandbox_labels`, as src/store/labels.ts
 * writes them): `BENCH_LIST_SANDBOXES` sandboxes of one tenant (default 100,000; `--quick`
 * 10,000), and as many again spread over 10 other tenants, interleaved in time. Each sandbox has
 * `team` (10 values), `env` (prod, dev, staging), `owner` (1,000 values, so about 100 sandboxes
 * each), and half of them `tier`. Then, for each page below, 20 calls to warm up and
 * `BENCH_LIST_CALLS` (default 200) measured calls of `store.listSandboxes` (limit 100), one at a
 * time: p50/p95/max in ms. The goal (issue 46): a label-selector page's p95 at most 20 ms on
 * each store. Every answer is checked: 100 sandboxes (or all there are), each of the tenant and
 * matching the selector (contract/labels.ts `selectorMatches`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Insertable } from 'kysely';
import { numericLabelKey, parseLabelSelector, selectorMatches } from '../../contract/index.js';
import { openDatabase } from '../../src/store/database.js';
import { openStore, type Store, type StoreOptions } from '../../src/store/index.js';
import type { SandboxLabelsTable, SandboxesTable } from '../../src/store/schema.js';
import { benchDatabaseUrl, createBenchSchema } from './postgres-schema.js';
import { problems, stamp, summary, type Summary } from './support.js';

const LIMIT = 100;
const OTHER_TENANTS = 10;
const WARMUP_CALLS = 20;
/** The goal of issue 46: a label-selector page's p95, in ms. */
const GOAL_P95_MS = 20;

/** A page the bench measures: its name, its selector (none: the unfiltered page). */
interface PageCase {
  name: string;
  selector?: string;
  /** Follow the page token this many pages first (a deep page). */
  depth?: number;
  /** Whether the goal applies to it. */
  goal: boolean;
  /** Measured calls, when fewer than the run's (a slow page). */
  calls?: number;
}

const CASES: PageCase[] = [
  { name: 'unfiltered', goal: false },
  { name: 'one label (10 %)', selector: 'team=team-3', goal: true },
  { name: 'label and set (6.7 %)', selector: 'team=team-3,env in (prod,dev)', goal: true },
  { name: 'rare label (0.1 %)', selector: 'owner=owner-7', goal: true },
  { name: 'two labels, one rare', selector: 'env=prod,owner=owner-7', goal: true },
  { name: 'no match', selector: 'owner=nobody', goal: true },
  { name: 'set and key (33 %)', selector: 'env in (prod,dev),tier', goal: true },
  { name: 'one label, page 20', selector: 'team=team-3', depth: 19, goal: true },
  { name: 'negation only (90 %)', selector: 'team!=team-3', goal: false },
  { name: 'key absent (50 %)', selector: '!tier', goal: false },
  // The slow case: negations alone, and none match, so the page reads every sandbox.
  { name: 'negation, none match', selector: '!team', goal: false, calls: 10 },
];

/** The labels of the target tenant's sandbox number `n`. */
function labelsOf(n: number): Record<string, string> {
  return {
    team: `team-${n % 10}`,
    env: ['prod', 'dev', 'staging'][n % 3] as string,
    owner: `owner-${Math.floor(n / 7) % 1000}`,
    ...(n % 2 === 0 ? { tier: n % 4 === 0 ? 'gold' : 'silver' } : {}),
  };
}

/** Inserts the rows directly, in batches. */
async function seed(options: StoreOptions, count: number): Promise<void> {
  const { db } = openDatabase(options);
  const startMs = Date.parse('2026-01-01T00:00:00.000Z');
  const total = count * 2;
  const batch = 500;
  try {
    for (let from = 0; from < total; from += batch) {
      const sandboxes: Insertable<SandboxesTable>[] = [];
      const labels: Insertable<SandboxLabelsTable>[] = [];
      for (let i = from; i < Math.min(total, from + batch); i++) {
        // Even rows are the target tenant's, odd rows the 10 others', interleaved in time.
        const tenant = i % 2 === 0 ? 'acme' : `other-${i % (2 * OTHER_TENANTS)}`;
        const n = Math.floor(i / 2);
        const id = `sbx_${String(i).padStart(26, '0')}`;
        const createdAt = new Date(startMs + i * 1000).toISOString();
        const rowLabels = labelsOf(n);
        sandboxes.push({
          id,
          tenant,
          template: 'base',
          cpu: 1,
          cpu_millicores: 1000,
          memory_mib: 1024,
          disk_mib: 2048,
          state: n % 5 === 0 ? 'deleted' : 'running',
          generation: 1,
          operation_id: `op_${String(i).padStart(26, '0')}`,
          pod_name: null,
          pod_uid: null,
          pod_ip: null,
          failure_code: null,
          failure_message: null,
          created_at: createdAt,
          updated_at: createdAt,
          ttl_ms: null,
          running_at: null,
          expire_time: null,
          labels: JSON.stringify(rowLabels),
        });
        for (const [key, value] of Object.entries(rowLabels)) {
          labels.push({
            sandbox_id: id,
            tenant,
            key,
            value,
            numeric_value: numericLabelKey(value) ?? null,
            created_at: createdAt,
          });
        }
      }
      await db.transaction().execute(async (trx) => {
        await trx.insertInto('sandboxes').values(sandboxes).execute();
        await trx.insertInto('sandbox_labels').values(labels).execute();
      });
    }
  } finally {
    await db.destroy();
  }
}

/** How many sandboxes a case's page holds: of the tenant's `count`, those after `depth` pages. */
function expectedRows(count: number, page: PageCase, depth: number): number {
  const selector = parseLabelSelector(page.selector ?? '');
  let matching = 0;
  for (let n = 0; n < count; n++) if (selectorMatches(selector, labelsOf(n))) matching++;
  return Math.max(0, Math.min(LIMIT, matching - depth * LIMIT));
}

/** One store's figures: a summary per page case. */
type StoreFigures = Record<string, Summary & { goal_met?: boolean }>;

/** Measures every case on an open store; checks each answer. */
async function measurePages(store: Store, count: number, calls: number): Promise<StoreFigures> {
  const figures: StoreFigures = {};
  for (const page of CASES) {
    const selector = page.selector === undefined ? undefined : parseLabelSelector(page.selector);
    let pageToken: string | undefined;
    let depth = 0;
    for (; depth < (page.depth ?? 0); depth++) {
      const next = (await store.listSandboxes('acme', { limit: LIMIT, selector, pageToken }))
        .nextPageToken;
      if (next === undefined) break;
      pageToken = next;
    }
    const expected = expectedRows(count, page, depth);
    const once = async () => {
      const began = performance.now();
      const answer = await store.listSandboxes('acme', { limit: LIMIT, selector, pageToken });
      const ms = performance.now() - began;
      const wrong = answer.sandboxes.find(
        (s) => s.tenant !== 'acme' || (selector && !selectorMatches(selector, s.labels)),
      );
      if (wrong) problems.push(`list ${page.name}: ${wrong.id} does not match`);
      if (answer.sandboxes.length !== expected) {
        problems.push(`list ${page.name}: ${answer.sandboxes.length} sandboxes, not ${expected}`);
      }
      return ms;
    };
    const measuredCalls = Math.min(calls, page.calls ?? calls);
    for (let i = 0; i < Math.min(WARMUP_CALLS, measuredCalls); i++) await once();
    const times: number[] = [];
    for (let i = 0; i < measuredCalls; i++) times.push(await once());
    const measured = summary(times);
    figures[page.name] = {
      ...measured,
      ...(page.goal && { goal_met: measured.p95 <= GOAL_P95_MS }),
    };
    console.log(
      `${stamp()}   ${page.name.padEnd(24)} ${(page.selector ?? '').padEnd(32)} p50 ${measured.p50} ms  p95 ${measured.p95} ms  max ${measured.max} ms`,
    );
  }
  return figures;
}

/** Seeds a fresh database, then measures it. */
async function measureStore(
  name: string,
  options: StoreOptions,
  count: number,
  calls: number,
  analyze: (store: StoreOptions) => Promise<void>,
): Promise<{ seed_s: number; figures: StoreFigures }> {
  const store = await openStore(options);
  try {
    console.log(`${stamp()} ${name}: seeding ${count} sandboxes and ${count} of 10 other tenants`);
    const began = performance.now();
    await seed(options, count);
    await analyze(options);
    const seedS = Math.round((performance.now() - began) / 100) / 10;
    console.log(
      `${stamp()} ${name}: seeded in ${seedS} s; ${calls} calls per page (limit ${LIMIT})`,
    );
    return { seed_s: seedS, figures: await measurePages(store, count, calls) };
  } finally {
    await store.close();
  }
}

/** Runs the list bench on SQLite and, when a PostgreSQL URL is set, on PostgreSQL. */
export async function measureList(quick: boolean): Promise<Record<string, unknown>> {
  const count = Number(process.env.BENCH_LIST_SANDBOXES ?? (quick ? 10_000 : 100_000));
  const calls = Number(process.env.BENCH_LIST_CALLS ?? (quick ? 50 : 200));
  const results: Record<string, unknown> = {
    sandboxes: count,
    limit: LIMIT,
    calls,
    goal_p95_ms: GOAL_P95_MS,
  };

  const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-bench-list-'));
  try {
    // The store never runs ANALYZE on SQLite: neither does the bench.
    results.sqlite = await measureStore(
      'sqlite',
      { sqliteFile: join(dir, 'store.sqlite') },
      count,
      calls,
      async () => {},
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const url = benchDatabaseUrl();
  if (!url) {
    results.postgres = 'not measured: set BENCH_DATABASE_URL (or TEST_DATABASE_URL)';
    console.log(`${stamp()} postgres: not measured (no BENCH_DATABASE_URL or TEST_DATABASE_URL)`);
    return results;
  }
  const schema = await createBenchSchema(url, 'bench_list');
  try {
    results.postgres = await measureStore(
      'postgres',
      { databaseUrl: schema.databaseUrl },
      count,
      calls,
      () => schema.analyze(['sandboxes', 'sandbox_labels']),
    );
  } finally {
    await schema.drop();
  }
  return results;
}
