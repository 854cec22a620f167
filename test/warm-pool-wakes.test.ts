/**
 * src/activities/warm-pool-wakes.ts: a worker sends a pool at most one claim's signal per window;
 * a failed signal is forgotten, so the next claim sends; pools are kept apart.
 */
import { describe, expect, it } from 'vitest';
import { WARM_POOL_COALESCE_MS } from '../contract/index.js';
import { PoolWakeups } from '../src/activities/warm-pool-wakes.js';

function rig() {
  let nowMs = 1_000_000;
  const sent: string[] = [];
  const wakeups = new PoolWakeups(WARM_POOL_COALESCE_MS, () => nowMs);
  return {
    wakeups,
    sent,
    advance: (ms: number) => (nowMs += ms),
    wake: (pool: string) =>
      wakeups.wake(pool, async () => {
        sent.push(pool);
      }),
  };
}

describe('a worker waking its pools', () => {
  it('sends the first claim of a window and leaves out the rest of it', async () => {
    const r = rig();
    expect(await r.wake('pool-a')).toBe('sent');
    r.advance(WARM_POOL_COALESCE_MS - 1);
    expect(await r.wake('pool-a')).toBe('coalesced');
    r.advance(1);
    expect(await r.wake('pool-a')).toBe('sent');
    expect(r.sent).toEqual(['pool-a', 'pool-a']);
  });

  it('leaves out the claims that come while the first signal is still on its way', async () => {
    const r = rig();
    let release!: () => void;
    const first = r.wakeups.wake('pool-a', () => new Promise<void>((done) => (release = done)));
    expect(await r.wake('pool-a')).toBe('coalesced');
    release();
    expect(await first).toBe('sent');
  });

  it('keeps each pool apart', async () => {
    const r = rig();
    expect(await r.wake('pool-a')).toBe('sent');
    expect(await r.wake('pool-b')).toBe('sent');
    expect(r.sent).toEqual(['pool-a', 'pool-b']);
  });

  it('forgets a signal that failed, so the next claim sends again', async () => {
    const r = rig();
    await expect(
      r.wakeups.wake('pool-a', () => Promise.reject(new Error('unavailable'))),
    ).rejects.toThrow('unavailable');
    expect(await r.wake('pool-a')).toBe('sent');
  });
});
