import { describe, expect, it } from 'vitest';
import { classifyWatchEnd } from '../kubernetes/watch-loop.js';

describe('classifyWatchEnd: the re-open / degrade table of docs/architecture.md, "The readiness watch"', () => {
  it('re-opens after a clean end, a timeout, a dropped connection, 408, 410, 429 and 5xx', () => {
    expect(classifyWatchEnd(null)).toEqual({ action: 'reopen', cause: 'ended' });
    expect(classifyWatchEnd(new DOMException('idle', 'TimeoutError'))).toEqual({
      action: 'reopen',
      cause: 'timeout',
    });
    expect(classifyWatchEnd(new TypeError('terminated'))).toEqual({
      action: 'reopen',
      cause: 'dropped',
    });
    for (const status of [408, 410, 429, 500, 502, 503, 504]) {
      expect(classifyWatchEnd({ statusCode: status })).toMatchObject({ action: 'reopen', status });
    }
    // An in-stream ERROR event carries a metav1.Status.
    expect(classifyWatchEnd({ kind: 'Status', code: 410, reason: 'Expired' })).toMatchObject({
      action: 'reopen',
      cause: 'status-410',
    });
  });

  it('degrades on any other 4xx', () => {
    for (const status of [400, 401, 403, 404, 422]) {
      expect(classifyWatchEnd({ statusCode: status })).toMatchObject({ action: 'degrade', status });
    }
  });

  it("never reads a DOMException's legacy numeric code as an HTTP status", () => {
    expect(classifyWatchEnd(new DOMException('aborted', 'AbortError'))).toEqual({
      action: 'reopen',
      cause: 'dropped',
    });
  });
});
