/**
 * A better-sqlite3 connection as kysely's `SqliteDatabase`, preparing each SQL text once.
 *
 * kysely's SQLite driver prepares every query it runs (`database.prepare(sql)` per execution);
 * preparing costs SQLite a parse and a plan each time, about 50 µs for the store's queries here
 * against about 2 µs to run a prepared one (docs/benchmarks-log.md, "Throughput: what limits
 * it (2026-12-01)"), and a create runs about 40 statements. The store builds the same few dozen
 * SQL texts over and over (values are always parameters), so keeping the prepared statement per
 * text is safe: SQLite re-prepares a statement by itself when the schema changed under it
 * (`sqlite3_prepare_v2`), and the store runs one statement at a time per connection (the
 * dialect's lock; it never streams), so no cached statement is in use twice at once.
 */
import type { Database as SqliteConnection } from 'better-sqlite3';
import type { SqliteDatabase, SqliteStatement } from 'kysely';

/** How many distinct SQL texts stay prepared (least recently used dropped first). */
export const PREPARED_STATEMENTS_KEPT = 256;

/**
 * `database` behind kysely's {@link SqliteDatabase}, its statements kept prepared by SQL text.
 * @param kept how many SQL texts to keep (default {@link PREPARED_STATEMENTS_KEPT})
 * @throws from `prepare`: better-sqlite3's SqliteError for SQL it cannot prepare (not cached)
 */
export function withPreparedStatements(
  database: SqliteConnection,
  kept = PREPARED_STATEMENTS_KEPT,
): SqliteDatabase {
  const statements = new Map<string, SqliteStatement>();
  return {
    prepare(sql: string): SqliteStatement {
      const cached = statements.get(sql);
      if (cached) {
        // Most recently used last, so the first key is the one to drop.
        statements.delete(sql);
        statements.set(sql, cached);
        return cached;
      }
      const statement = database.prepare(sql);
      statements.set(sql, statement);
      if (statements.size > kept) statements.delete(statements.keys().next().value as string);
      return statement;
    },
    close(): void {
      statements.clear();
      database.close();
    },
  };
}
