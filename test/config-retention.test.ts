/**
 * The retention variables (src/config/retention.ts) as a table: the defaults, each kind's hours in
 * ms (0: kept for ever), and a start-up error naming the variable for a value out of range or
 * a key retention that outlasts the operations'.
 */
import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../src/config/index.js';

const BASE = { API_TOKENS: 'acme:token-1' };
const HOUR_MS = 3_600_000;

describe('retention configuration', () => {
  it('defaults to 30 days, events 7 days and idempotency keys 24 h, hourly batches of 1000', () => {
    expect(loadConfig(BASE).retention).toEqual({
      retentionMs: {
        sandboxes: 720 * HOUR_MS,
        operations: 720 * HOUR_MS,
        events: 168 * HOUR_MS,
        idempotency_keys: 24 * HOUR_MS,
        webhook_deliveries: 720 * HOUR_MS,
      },
      batchSize: 1_000,
      maxBatchesPerRun: 1_000,
      intervalMs: HOUR_MS,
    });
  });

  it('reads each kind in hours, 0 keeping it for ever', () => {
    const { retention } = loadConfig({
      ...BASE,
      SANDBOX_RETENTION_HOURS: '48',
      OPERATION_RETENTION_HOURS: '0',
      EVENT_RETENTION_HOURS: '72',
      IDEMPOTENCY_KEY_RETENTION_HOURS: '1',
      WEBHOOK_DELIVERY_RETENTION_HOURS: '0',
      RETENTION_BATCH_SIZE: '50',
      RETENTION_MAX_BATCHES_PER_RUN: '7',
      RETENTION_INTERVAL_MS: '60000',
    });
    expect(retention).toEqual({
      retentionMs: {
        sandboxes: 48 * HOUR_MS,
        operations: 0,
        events: 72 * HOUR_MS,
        idempotency_keys: HOUR_MS,
        webhook_deliveries: 0,
      },
      batchSize: 50,
      maxBatchesPerRun: 7,
      intervalMs: 60_000,
    });
  });

  it.each([
    ['SANDBOX_RETENTION_HOURS', '-1', /must be an integer from 0 to 87600, got "-1"/],
    ['EVENT_RETENTION_HOURS', '7d', /must be an integer from 0 to 87600, got "7d"/],
    ['RETENTION_BATCH_SIZE', '0', /must be an integer from 1 to 100000, got "0"/],
    ['RETENTION_INTERVAL_MS', '1000', /must be an integer from 60000 to 604800000/],
    ['IDEMPOTENCY_KEY_RETENTION_HOURS', '800', /800 outlasts OPERATION_RETENTION_HOURS \(720\)/],
    ['IDEMPOTENCY_KEY_RETENTION_HOURS', '0', /forever \(0\) outlasts OPERATION_RETENTION_HOURS/],
  ])('refuses %s=%s at start, naming it', (variable, value, message) => {
    let error: unknown;
    try {
      loadConfig({ ...BASE, [variable]: value });
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).variable).toBe(variable);
    expect((error as Error).message).toMatch(message);
  });
});
