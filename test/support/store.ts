/**
 * Store backends for tests: SQLite in a temporary file always, PostgreSQL too when
 * `TEST_DATABASE_URL` (a `postgres://` URL of a database the tests may create schemas in) is set.
 * Every target is fresh: a new file, or a new schema selected through `search_path`.
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { StoreOptions } from '../../src/store/index.js';

/** An empty database for one test, and how to throw it away. */
export interface StoreTarget {
  options: StoreOptions;
  /** Drops the schema or deletes the file; call after the stores on it are closed. */
  dispose(): Promise<void>;
}

/** A database engine the store runs on. */
export interface StoreBackend {
  name: 'sqlite' | 'postgres';
  /** Makes an empty database. */
  freshTarget(): Promise<StoreTarget>;
}

const sqlite: StoreBackend = {
  name: 'sqlite',
  async freshTarget() {
    const dir = mkdtempSync(join(tmpdir(), 'durable-sandbox-store-'));
    // A directory that does not exist yet: openStore must create it.
    const sqliteFile = join(dir, 'data', 'store.sqlite');
    return {
      options: { sqliteFile },
      async dispose() {
        rmSync(dir, { recursive: true, force: true });
      },
    };
  },
};

function postgres(databaseUrl: string): StoreBackend {
  return {
    name: 'postgres',
    async freshTarget() {
      const schema = `store_test_${randomUUID().replaceAll('-', '')}`;
      await withClient(databaseUrl, (client) => client.query(`create schema ${schema}`));
      const url = new URL(databaseUrl);
      url.searchParams.set('options', `-c search_path=${schema}`);
      return {
        options: { databaseUrl: url.toString() },
        async dispose() {
          await withClient(databaseUrl, (client) =>
            client.query(`drop schema if exists ${schema} cascade`),
          );
        },
      };
    },
  };
}

async function withClient<T>(url: string, fn: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

/**
 * An empty schema in the PostgreSQL database at `databaseUrl` (one the tests may create schemas
 * in), for a test stack; `options.databaseUrl` selects it through `search_path`.
 */
export function freshPostgresTarget(databaseUrl: string): Promise<StoreTarget> {
  return postgres(databaseUrl).freshTarget();
}

/** The backends to run store suites on: SQLite, plus PostgreSQL when TEST_DATABASE_URL is set. */
export function storeBackends(env: NodeJS.ProcessEnv = process.env): StoreBackend[] {
  const url = env.TEST_DATABASE_URL;
  return url ? [sqlite, postgres(url)] : [sqlite];
}
