/**
 * tools/bench/profile-summary.ts: self time of a V8 CPU profile by package or function, in a
 * window, idle kept apart. A profile of four nodes written by hand.
 */
import { describe, expect, it } from 'vitest';
import { groupOf, selfTime, type CpuProfile } from '../tools/bench/profile-summary.js';

const ROOT = '/repo';
const frame = (functionName: string, url: string) => ({ functionName, url, lineNumber: 9 });
const profile: CpuProfile = {
  nodes: [
    { id: 1, callFrame: frame('(root)', ''), children: [2, 3, 4] },
    { id: 2, callFrame: frame('(idle)', '') },
    { id: 3, callFrame: frame('executeQuery', 'file:///repo/node_modules/kysely/dist/x.js') },
    { id: 4, callFrame: frame('setPod', 'file:///repo/src/store/sandboxes.ts') },
  ],
  // Sample i stands for the delta to sample i + 1: idle 1 ms, kysely 2 ms, ours 3 ms, kysely 4 ms.
  samples: [2, 3, 4, 3, 2],
  timeDeltas: [0, 1_000, 2_000, 3_000, 4_000],
};

describe('profile summary', () => {
  it('sums self time by package, our files by path, idle apart', () => {
    const summary = selfTime(profile, 'package', {}, ROOT);
    expect(summary.idleMs).toBe(1);
    expect(summary.busyMs).toBe(9);
    expect(summary.groups).toEqual([
      ['kysely', 6],
      ['src/store/sandboxes.ts', 3],
    ]);
  });

  it('keeps only the samples inside the window', () => {
    // Samples at 0, 1, 3, 6 and 10 ms: the window 2.5–7 ms holds the third and the fourth.
    const summary = selfTime(profile, 'package', { fromS: 0.0025, toS: 0.007 }, ROOT);
    expect(summary.groups).toEqual([
      ['kysely', 4],
      ['src/store/sandboxes.ts', 3],
    ]);
  });

  it('names a function with its file and 1-based line', () => {
    expect(groupOf(profile.nodes[3]!.callFrame, 'function', ROOT)).toBe(
      'setPod src/store/sandboxes.ts:10',
    );
    expect(groupOf(frame('scavenge', ''), 'package', ROOT)).toBe('scavenge');
  });
});
