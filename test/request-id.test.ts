/**
 * Request ids and the request log: `X-Request-Id` taken from the request or made, sent back on
 * every response and carried by every log line written while the request is served; probes and
 * scrapes logged at debug.
 */
import { Writable } from 'node:stream';
import request from 'supertest';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../src/process/logger.js';
import { acceptedCreate, createBody, startApiStack, type ApiStack } from './support/api.js';

interface LogLine {
  level: number;
  msg: string;
  request_id?: string;
  path?: string;
}

class LogCapture extends Writable {
  lines: LogLine[] = [];
  override _write(chunk: Buffer, _encoding: string, done: () => void): void {
    for (const line of chunk.toString().split('\n')) {
      if (line.trim()) this.lines.push(JSON.parse(line) as LogLine);
    }
    done();
  }
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const DEBUG = 20;
const INFO = 30;

let api: ApiStack;
let logs: LogCapture;
let app: ReturnType<ApiStack['appWith']>;
beforeAll(async () => {
  api = await startApiStack({ stack: { cluster: { startupDelayMs: 100 } } });
  logs = new LogCapture();
  app = api.appWith({}, { logger: createLogger('api', 'debug', logs) });
});
afterAll(async () => {
  await api?.stop();
});

describe('X-Request-Id and the request log', () => {
  it('makes a request id when none is given, and echoes a given one', async () => {
    const made = await request(app).get('/healthz');
    expect(made.headers['x-request-id']).toMatch(UUID);
    const given = await request(app).get('/healthz').set('X-Request-Id', 'lb-1234.abc');
    expect(given.headers['x-request-id']).toBe('lb-1234.abc');
    const unusable = await request(app)
      .get('/healthz')
      .set('X-Request-Id', `bad id ${'x'.repeat(200)}`);
    expect(unusable.headers['x-request-id']).toMatch(UUID);
  });

  it('sends it on error answers too', async () => {
    const unauthenticated = await request(app).get('/v1/sandboxes');
    expect(unauthenticated.status).toBe(401);
    expect(unauthenticated.headers['x-request-id']).toMatch(UUID);
    const unknown = await request(app).get('/nope').set('X-Request-Id', 'req-404');
    expect(unknown.status).toBe(404);
    expect(unknown.headers['x-request-id']).toBe('req-404');
  });

  it('every log line written while serving a create carries its request id', async () => {
    await acceptedCreate(app, api.tenantA, createBody(2048), { 'X-Request-Id': 'req-create-1' });
    const accepted = logs.lines.find(
      (line) => line.msg === 'create accepted' && line.request_id === 'req-create-1',
    );
    expect(accepted, JSON.stringify(logs.lines.slice(-5))).toBeDefined();
    const requestLine = logs.lines.find(
      (line) => line.msg === 'request' && line.request_id === 'req-create-1',
    );
    expect(requestLine).toMatchObject({ path: '/v1/sandboxes', level: INFO });
  });

  it('logs probes and scrapes at debug, API calls at info', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics']) {
      await request(app)
        .get(path)
        .set('X-Request-Id', `probe${path.replace('/', '-')}`);
      const line = logs.lines.find((l) => l.request_id === `probe${path.replace('/', '-')}`);
      expect(line, path).toMatchObject({ msg: 'request', level: DEBUG, path });
    }
  });
});
