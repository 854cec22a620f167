/**
 * The store's prepared statements (src/store/statement-cache.ts): one prepare per SQL text, the
 * least recently used text dropped beyond the bound, results as without the cache, and a
 * statement still right after the schema changed under it. An in-memory better-sqlite3
 * database, no server.
 */
import SQLite from 'better-sqlite3';
import { describe, expect, it } from 'vitest';
import { withPreparedStatements } from '../src/store/statement-cache.js';

/** An in-memory database whose `prepare` calls are counted by SQL text. */
function countedDatabase() {
  const database = new SQLite(':memory:');
  const prepared: string[] = [];
  const prepare = database.prepare.bind(database);
  database.prepare = ((sql: string) => {
    prepared.push(sql);
    return prepare(sql);
  }) as typeof database.prepare;
  return { database, prepared };
}

describe('withPreparedStatements', () => {
  it('prepares each SQL text once and answers as a fresh statement would', () => {
    const { database, prepared } = countedDatabase();
    const cached = withPreparedStatements(database);
    cached.prepare('create table t (id integer primary key, name text)').run([]);
    for (let i = 1; i <= 5; i++)
      cached.prepare('insert into t (id, name) values (?, ?)').run([i, `n${i}`]);
    const select = 'select name from t where id = ?';
    expect(cached.prepare(select).all([3])).toEqual([{ name: 'n3' }]);
    expect(cached.prepare(select).all([5])).toEqual([{ name: 'n5' }]);
    expect(cached.prepare(select).reader).toBe(true);
    expect(prepared.filter((sql) => sql === select)).toHaveLength(1);
    expect(prepared.filter((sql) => sql.startsWith('insert'))).toHaveLength(1);
  });

  it('drops the least recently used text beyond its bound, and prepares it again when asked', () => {
    const { database, prepared } = countedDatabase();
    const cached = withPreparedStatements(database, 2);
    const a = 'select 1 as a';
    const b = 'select 2 as b';
    const c = 'select 3 as c';
    cached.prepare(a);
    cached.prepare(b);
    cached.prepare(a); // a used last: b is the least recently used
    cached.prepare(c); // drops b
    cached.prepare(a);
    expect(prepared).toEqual([a, b, c]);
    expect(cached.prepare(b).all([])).toEqual([{ b: 2 }]);
    expect(prepared).toEqual([a, b, c, b]);
  });

  it('answers right after the schema changed under a kept statement', () => {
    const { database } = countedDatabase();
    const cached = withPreparedStatements(database);
    cached.prepare('create table t (id integer primary key)').run([]);
    cached.prepare('insert into t (id) values (?)').run([1]);
    const select = 'select * from t';
    expect(cached.prepare(select).all([])).toEqual([{ id: 1 }]);
    cached.prepare('alter table t add column name text').run([]);
    cached.prepare("update t set name = 'one'").run([]);
    expect(cached.prepare(select).all([])).toEqual([{ id: 1, name: 'one' }]);
    cached.close();
    expect(database.open).toBe(false);
  });
});
