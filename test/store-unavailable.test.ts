/**
 * A store whose database cannot be reached answers 503 `unavailable` with `Retry-After` (what a
 * client can act on), not 500: the error is node-postgres's own, from a port nothing listens on.
 */
import express from 'express';
import pg from 'pg';
import { pino } from 'pino';
import request from 'supertest';
import { describe, expect, it } from 'vitest';
import { errorHandler, UNAVAILABLE_RETRY_AFTER_S } from '../src/api/errors.js';
import { freePort } from '../src/process/free-port.js';
import { isStoreUnavailable } from '../src/store/index.js';

async function refusedConnectionError(): Promise<unknown> {
  const client = new pg.Client({
    connectionString: `postgres://x:x@127.0.0.1:${await freePort()}/x`,
  });
  return client.connect().then(
    () => new Error('connected?'),
    (err: unknown) => err,
  );
}

function appThrowing(err: unknown) {
  const app = express();
  app.get('/boom', () => {
    throw err;
  });
  app.use(errorHandler(pino({ level: 'silent' }), '1mb'));
  return app;
}

describe('a store that cannot be reached', () => {
  it('is recognised from node-postgres errors and PostgreSQL shutdown codes, not from others', async () => {
    expect(isStoreUnavailable(await refusedConnectionError())).toBe(true);
    expect(
      isStoreUnavailable(Object.assign(new Error('terminating connection'), { code: '57P01' })),
    ).toBe(true);
    expect(isStoreUnavailable(new Error('Connection terminated unexpectedly'))).toBe(true);
    expect(isStoreUnavailable(Object.assign(new Error('duplicate key'), { code: '23505' }))).toBe(
      false,
    );
    expect(isStoreUnavailable(new TypeError('x is undefined'))).toBe(false);
  });

  it('answers 503 unavailable with Retry-After; a bug still answers 500', async () => {
    const down = await request(appThrowing(await refusedConnectionError())).get('/boom');
    expect(down.status).toBe(503);
    expect(down.body.error.code).toBe('unavailable');
    expect(down.headers['retry-after']).toBe(String(UNAVAILABLE_RETRY_AFTER_S));
    const bug = await request(appThrowing(new TypeError('x is undefined'))).get('/boom');
    expect(bug.status).toBe(500);
    expect(bug.headers['retry-after']).toBeUndefined();
  });
});
