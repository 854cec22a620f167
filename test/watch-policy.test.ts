/**
 * The informers' error table and back-off (src/kubernetes/watch-policy.ts): pure functions, checked
 * with a seeded random source.
 */
import { describe, expect, it } from 'vitest';
import {
  backoffDelayMs,
  classifyInformerError,
  WATCH_ERROR_POLICY,
} from '../src/kubernetes/watch-policy.js';
import { WatchRequestError } from '../src/kubernetes/informer-watch.js';

/** A small seeded generator (mulberry32), so the draws are the same on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('backoffDelayMs: capped exponential back-off with full jitter', () => {
  it('stays within [0, min(cap, base·2^n)) and reaches the cap', () => {
    const random = seeded(42);
    for (let failures = 0; failures < 40; failures++) {
      const ceiling = Math.min(30_000, 1_000 * 2 ** failures);
      for (let draw = 0; draw < 50; draw++) {
        const delay = backoffDelayMs(failures, { baseMs: 1_000 }, random);
        expect(delay).toBeGreaterThanOrEqual(0);
        expect(delay).toBeLessThan(ceiling);
      }
    }
    expect(WATCH_ERROR_POLICY.capMs).toBe(30_000);
  });

  it('spreads a fleet failing at once: 300 watchers do not come back together', () => {
    const random = seeded(7);
    const delays = Array.from({ length: 300 }, () => backoffDelayMs(3, { baseMs: 1_000 }, random));
    const seconds = new Set(delays.map((delay) => Math.floor(delay / 1_000)));
    expect(seconds.size).toBe(8); // spread over the whole [0, 8 s) window
    const largestSameSecond = Math.max(
      ...[...seconds].map((s) => delays.filter((d) => Math.floor(d / 1_000) === s).length),
    );
    expect(largestSameSecond).toBeLessThan(70);
  });

  it("never goes below the server's Retry-After", () => {
    const random = seeded(1);
    for (let i = 0; i < 100; i++) {
      expect(backoffDelayMs(0, { baseMs: 100 }, random, 2_000)).toBeGreaterThanOrEqual(2_000);
    }
  });
});

describe('classifyInformerError: the table of docs/architecture.md, "The readiness watch"', () => {
  it('re-opens at once after a clean end, an idle cut and a 410', () => {
    expect(classifyInformerError(null)).toMatchObject({ action: 'reopen', cause: 'ended' });
    expect(classifyInformerError(new DOMException('idle', 'TimeoutError'))).toMatchObject({
      action: 'reopen',
      cause: 'timeout',
    });
    expect(classifyInformerError({ code: 410 })).toMatchObject({ action: 'reopen' });
  });

  it('backs off on drops, 408, 429 (with Retry-After) and 5xx', () => {
    expect(classifyInformerError(new TypeError('terminated'))).toMatchObject({
      action: 'backoff',
      cause: 'dropped',
    });
    for (const status of [408, 500, 502, 503, 504]) {
      expect(classifyInformerError(new WatchRequestError(status, 'x', undefined))).toMatchObject({
        action: 'backoff',
        status,
      });
    }
    expect(classifyInformerError(new WatchRequestError(429, 'slow', 3_000))).toMatchObject({
      action: 'backoff',
      retryAfterMs: 3_000,
    });
    // A list's ApiException carries the header.
    expect(
      classifyInformerError({ code: 429, headers: { 'retry-after': '2' }, body: '{}' }),
    ).toMatchObject({ action: 'backoff', retryAfterMs: 2_000 });
  });

  it('401 is retried (bounded by the caller), 403 and other 4xx refuse with the message', () => {
    expect(
      classifyInformerError(new WatchRequestError(401, 'Unauthorized', undefined)),
    ).toMatchObject({ action: 'unauthorized' });
    expect(
      classifyInformerError(new WatchRequestError(403, 'pods is forbidden: …', undefined)),
    ).toMatchObject({ action: 'forbidden', message: 'pods is forbidden: …' });
    expect(
      classifyInformerError({
        code: 403,
        body: JSON.stringify({ message: 'events is forbidden' }),
      }),
    ).toMatchObject({ action: 'forbidden', message: 'events is forbidden' });
    expect(classifyInformerError({ statusCode: 404 })).toMatchObject({ action: 'refused' });
  });

  it("never reads a DOMException's legacy numeric code as an HTTP status", () => {
    expect(classifyInformerError(new DOMException('aborted', 'AbortError'))).toMatchObject({
      action: 'backoff',
      cause: 'dropped',
    });
  });
});
