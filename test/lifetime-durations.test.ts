/**
 * Lifetimes as data (docs/api.md, "Lifetimes"): AIP-142 durations, a template's
 * `default_ttl` / `max_ttl`, and what a create body's `ttl` becomes. Pure functions: fast tier.
 */
import { describe, expect, it } from 'vitest';
import { parseCreateRequest, parseExtendRequest } from '../src/api/validation.js';
import { ApiError } from '../src/api/errors.js';
import { loadConfig } from '../src/config/index.js';
import { MAX_TTL_LIMIT_MS, formatDuration, parseDurationMs } from '../contract/index.js';

describe('parseDurationMs', () => {
  it.each([
    ['3600s', 3_600_000],
    ['1.5s', 1_500],
    ['0.0001s', 1], // never shorter than asked: a fraction of a ms rounds up
    ['0s', 0],
    ['1h', undefined],
    ['3600', undefined],
    ['-1s', undefined],
    [' 1s', undefined],
    ['1.0000000001s', undefined],
  ])('%s -> %s', (text, ms) => {
    expect(parseDurationMs(text)).toBe(ms);
  });

  it('formats what it parses', () => {
    expect(formatDuration(90_000)).toBe('90s');
    expect(parseDurationMs(formatDuration(MAX_TTL_LIMIT_MS))).toBe(MAX_TTL_LIMIT_MS);
  });
});

function templates(json: unknown) {
  return loadConfig({ SANDBOX_TEMPLATES: JSON.stringify(json) }).templates;
}

describe('SANDBOX_TEMPLATES lifetimes', () => {
  it('refuses a default_ttl above max_ttl, naming both', () => {
    expect(() => templates({ base: { image: 'i', default_ttl: '601s', max_ttl: '600s' } })).toThrow(
      /base\.default_ttl: is above max_ttl \(600s\)/,
    );
  });

  it('refuses a lifetime that is not a positive duration', () => {
    expect(() => templates({ base: { image: 'i', max_ttl: '0s' } })).toThrow(/base\.max_ttl/);
    expect(() => templates({ base: { image: 'i', default_ttl: '1h' } })).toThrow(
      /base\.default_ttl/,
    );
  });
});

describe("a create body's ttl", () => {
  const catalog = templates({
    base: { image: 'i' },
    leased: { image: 'i', default_ttl: '60s', max_ttl: '3600s' },
  });
  const body = (extra: Record<string, unknown>) => ({
    template: 'base',
    resources: { cpu: 1, memory_mib: 256, disk_mib: 1024 },
    ...extra,
  });

  it.each([
    [{}, undefined],
    [{ ttl: '30s' }, { ttlMs: 30_000, from: 'request' }],
    [{ template: 'leased' }, { ttlMs: 60_000, from: 'template' }],
    [
      { template: 'leased', ttl: '3600s' },
      { ttlMs: 3_600_000, from: 'request' },
    ],
  ])('%j -> %j', (extra, lifetime) => {
    expect(parseCreateRequest(body(extra), catalog).lifetime).toEqual(lifetime);
  });

  it.each([
    [
      { template: 'leased', ttl: '3601s' },
      /^ttl must be at most 3600s \(max_ttl of template leased\)/,
    ],
    [{ ttl: '0s' }, /^ttl must be a duration/],
    [{ ttl: 3600 }, /^ttl must be a duration string/],
  ])('refuses %j', (extra, message) => {
    expect(() => parseCreateRequest(body(extra), catalog)).toThrow(message);
  });
});

describe('an extend body', () => {
  it('takes exactly one of ttl and expire_time', () => {
    expect(parseExtendRequest({ ttl: '60s' })).toEqual({ ttlMs: 60_000 });
    expect(parseExtendRequest({ expire_time: '2026-12-03T10:00:00Z' })).toEqual({
      expireTimeMs: Date.parse('2026-12-03T10:00:00Z'),
    });
    for (const bad of [
      {},
      { ttl: '60s', expire_time: '2026-12-03T10:00:00Z' },
      { expire_time: 'tomorrow' },
      { ttl: '60s', extra: 1 },
    ]) {
      expect(() => parseExtendRequest(bad)).toThrow(ApiError);
    }
  });
});
