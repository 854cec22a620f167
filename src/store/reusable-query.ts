/**
 * A read the store runs again and again with other values (the operation read behind every
 * `GET /v1/operations/{id}` and each wake of a long-poll: about 8 per refused create), built and
 * compiled by kysely once per database instead of on every call.
 *
 * Building a kysely query (its operation tree, frozen node by node) and compiling it to SQL
 * costs more CPU than SQLite's run of the prepared statement: the operation read with its
 * sandbox's 20 columns took 91 µs of CPU built each time and 24 µs compiled once (20,000 reads
 * on SQLite; docs/benchmarks.md, "CPU per operation: `cpu`"). The SQL text of such a read never
 * changes, only its values, which kysely always sends as parameters: so the query is compiled
 * once with a marker value standing for each parameter, and each call runs that compiled query
 * (kysely's `executeQuery(CompiledQuery)`, public API) with the markers replaced by the call's
 * values. On SQLite the text then also meets its prepared statement (src/store/statement-cache.ts).
 */
import type { Compilable, CompiledQuery, Kysely } from 'kysely';

/** The value standing for parameter `i` while the template compiles (no real id has NULs). */
const marker = (i: number) => `\u0000reusable-query-parameter-${i}\u0000`;

/** A compiled query, and for each of its parameters which call argument fills it (-1: none). */
interface Template<R> {
  compiled: CompiledQuery<R>;
  slots: number[];
}

/**
 * A query over string parameters, compiled once per database (a transaction, which lives for
 * one use, builds it each time).
 * @param build builds the query from the database and the call's values, using each value
 *   exactly once, as a value (kysely makes it a parameter), never as an identifier or raw SQL
 * @returns a function running the query with `params`: the rows, as `execute()` would return
 * @throws Error at the first call when `build` used a value other than as one parameter (a
 *   programming error; nothing is run)
 */
export function reusableQuery<DB, P extends string[], R>(
  build: (db: Kysely<DB>, ...params: P) => Compilable<R>,
): (db: Kysely<DB>, ...params: P) => Promise<R[]> {
  const templates = new WeakMap<Kysely<DB>, Template<R>>();
  return async (db, ...params) => {
    if (db.isTransaction) return (await db.executeQuery(build(db, ...params).compile())).rows;
    let template = templates.get(db);
    if (!template) {
      template = compileTemplate(build, db, params.length);
      templates.set(db, template);
    }
    const { compiled, slots } = template;
    const parameters = compiled.parameters.map((value, j) =>
      slots[j]! >= 0 ? params[slots[j]!] : value,
    );
    return (await db.executeQuery<R>({ ...compiled, parameters })).rows;
  };
}

function compileTemplate<DB, P extends string[], R>(
  build: (db: Kysely<DB>, ...params: P) => Compilable<R>,
  db: Kysely<DB>,
  count: number,
): Template<R> {
  const markers = Array.from({ length: count }, (_, i) => marker(i));
  const compiled = build(db, ...(markers as P)).compile();
  const slots = compiled.parameters.map((value) => markers.indexOf(value as string));
  markers.forEach((m, i) => {
    const uses = slots.filter((slot) => slot === i).length;
    if (uses !== 1 || compiled.sql.includes(m))
      throw new Error(
        `reusableQuery: value ${i} must be used exactly once, as a parameter (used ${uses} times)`,
      );
  });
  return { compiled, slots };
}
