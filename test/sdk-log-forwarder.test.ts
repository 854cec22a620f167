/**
 * The worker's SDK log forwarder (src/worker/runtime.ts, `sdkLogForwarder`): which SDK lines
 * reach pino, at what level and with which fields, and that a line pino would drop costs no copy
 * of its meta. A pino logger writing into an array; no server.
 */
import { describe, expect, it } from 'vitest';
import pino, { type Level } from 'pino';
import type { LogLevel } from '@temporalio/worker';
import { sdkLogForwarder } from '../src/worker/runtime.js';

/** A pino logger at `level` whose lines land, parsed, in `lines`. */
function capture(level: Level) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino(
    { level },
    { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) },
  );
  return { logger, lines };
}

/**
 * An activity's meta (or `extra`'s component) whose `activityId` counts its reads: a copy of
 * the meta (the fields of a written line) reads it, the forwarder's routing (`sdkComponent`, the
 * expected-failure mark) does not.
 */
function countingMeta(extra: Record<string, unknown> = {}) {
  const counter = { reads: 0 };
  const meta: Record<string, unknown> = { sdkComponent: 'activity', ...extra };
  Object.defineProperty(meta, 'activityId', {
    enumerable: true,
    get() {
      counter.reads += 1;
      return 'act-1';
    },
  });
  return { meta, counter };
}

const line = (level: LogLevel, meta: Record<string, unknown>) => ({
  level,
  message: 'Activity completed',
  meta,
});

describe('the SDK log forwarder', () => {
  it("drops a line below pino's level without copying its meta", () => {
    const { logger, lines } = capture('warn');
    const { meta, counter } = countingMeta();
    sdkLogForwarder(logger, 'WARN')(line('INFO', meta));
    expect(lines).toEqual([]);
    expect(counter.reads, 'the meta of a dropped line was copied').toBe(0);
  });

  it("writes the same line at pino's level, the meta as its fields", () => {
    const { logger, lines } = capture('info');
    const { meta, counter } = countingMeta({ taskToken: 'opaque' });
    sdkLogForwarder(logger, 'WARN')(line('INFO', meta));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 30,
      msg: 'Activity completed',
      activityId: 'act-1',
      sdkComponent: 'activity',
    });
    expect(lines[0]).not.toHaveProperty('taskToken');
    expect(lines[0]).not.toHaveProperty('source');
    expect(counter.reads).toBe(1);
  });

  it("drops the SDK's own debug lines below pino's level without copying their meta", () => {
    // TEMPORAL_LOG_LEVEL=DEBUG with pino at info: the SDK sends debug lines pino does not want.
    const { logger, lines } = capture('info');
    const { meta, counter } = countingMeta({ sdkComponent: 'worker' });
    sdkLogForwarder(logger, 'DEBUG')(line('DEBUG', meta));
    expect(lines).toEqual([]);
    expect(counter.reads, 'the meta of a dropped line was copied').toBe(0);
  });

  it("marks the SDK's own lines and keeps them to the SDK's level", () => {
    const { logger, lines } = capture('trace');
    const forward = sdkLogForwarder(logger, 'WARN');
    forward({ level: 'INFO', message: 'Worker state changed', meta: { sdkComponent: 'worker' } });
    const error = new Error('poll failed');
    forward({ level: 'ERROR', message: 'Worker failed', meta: { sdkComponent: 'worker', error } });
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      level: 50,
      msg: 'Worker failed',
      source: 'temporal-sdk',
      err: { message: 'poll failed' },
    });
  });
});
