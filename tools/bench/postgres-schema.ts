/**
 * The PostgreSQL a bench measures the store on (tools/bench/list.ts, retention.ts, notify.ts):
 * the server of `BENCH_DATABASE_URL`, else `TEST_DATABASE_URL`, else `DATABASE_URL`, and a fresh
 * schema on it per run, selected through `search_path` and dropped after, as the store tests do
 * (test/support/store.ts).
 */
import { randomUUID } from 'node:crypto';
import pg from 'pg';

/** The bench's PostgreSQL URL, as the module header says; undefined when none is set. */
export function benchDatabaseUrl(env: NodeJS.ProcessEnv = process.env): string | undefined {
  return env.BENCH_DATABASE_URL || env.TEST_DATABASE_URL || env.DATABASE_URL || undefined;
}

/** A bench's own schema, from {@link createBenchSchema}. */
export interface BenchSchema {
  /** Its name: the prefix, `_` and 32 hex digits. */
  name: string;
  /** The server's URL with `search_path` set to the schema (libpq's `options`), for openStore. */
  databaseUrl: string;
  /**
   * Runs ANALYZE on these tables of the schema, as autovacuum would after a bulk load (the
   * planner's statistics).
   */
  analyze(tables: readonly string[]): Promise<void>;
  /** Drops the schema and all in it, and closes the connection that made it. */
  drop(): Promise<void>;
}

/**
 * Creates a schema named `<prefix>_<uuid>` on the server at `url`, over a connection kept open
 * for {@link BenchSchema.analyze} and {@link BenchSchema.drop}.
 * @throws pg's error when the server cannot be reached or refuses `create schema`
 */
export async function createBenchSchema(url: string, prefix: string): Promise<BenchSchema> {
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  const name = `${prefix}_${randomUUID().replaceAll('-', '')}`;
  try {
    await admin.query(`create schema ${name}`);
  } catch (err) {
    await admin.end();
    throw err;
  }
  const scoped = new URL(url);
  scoped.searchParams.set('options', `-c search_path=${name}`);
  return {
    name,
    databaseUrl: scoped.toString(),
    async analyze(tables) {
      for (const table of tables) await admin.query(`analyze ${name}.${table}`);
    },
    async drop() {
      try {
        await admin.query(`drop schema if exists ${name} cascade`);
      } finally {
        await admin.end();
      }
    },
  };
}
