/**
 * The SQL statements a real store sends while a call runs, seen where they reach the drivers
 * (better-sqlite3's prepared statements, pg's `Client.query`): what the database was asked, so a
 * test can say how often a store method reads a table. Nothing is stubbed: each statement still
 * runs as sent.
 */
import SQLite from 'better-sqlite3';
import pg from 'pg';

type Method = (this: unknown, ...args: unknown[]) => unknown;

/** The prototype of better-sqlite3's statements (the class is not exported). */
function sqliteStatementPrototype(): Record<string, Method> {
  const probe = new SQLite(':memory:');
  try {
    return Object.getPrototypeOf(probe.prepare('select 1')) as Record<string, Method>;
  } finally {
    probe.close();
  }
}

/**
 * Runs `call` and answers its result with the SQL texts of every statement run meanwhile, in
 * order, on either engine (statements of other work running at the same time included).
 * @throws what `call` throws (the drivers are restored first)
 */
export async function statementsDuring<T>(
  call: () => Promise<T>,
): Promise<{ result: T; statements: string[] }> {
  const statements: string[] = [];
  const restores: Array<() => void> = [];
  const wrap = (
    target: Record<string, Method>,
    name: string,
    sqlOf: (self: unknown, args: unknown[]) => string,
  ) => {
    const original = target[name] as Method;
    target[name] = function (this: unknown, ...args: unknown[]) {
      statements.push(sqlOf(this, args));
      return original.apply(this, args);
    };
    restores.push(() => {
      target[name] = original;
    });
  };
  const statement = sqliteStatementPrototype();
  for (const name of ['run', 'get', 'all', 'iterate']) {
    wrap(statement, name, (self) => (self as { source: string }).source);
  }
  wrap(pg.Client.prototype as unknown as Record<string, Method>, 'query', (_self, args) => {
    const [query] = args;
    return typeof query === 'string' ? query : String((query as { text?: string }).text);
  });
  try {
    const result = await call();
    return { result, statements };
  } finally {
    for (const restore of restores) restore();
  }
}

/** Whether `sql` is a SELECT whose own table is `sandboxes` (a subquery of a write is not). */
export function readsSandboxes(sql: string): boolean {
  return /^\s*select\b[^()]*?\bfrom\s+"sandboxes"/i.test(sql);
}
