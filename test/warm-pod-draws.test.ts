/**
 * A claim's candidates (src/kubernetes/warm-pods.ts `readyWarmPodsInRandomOrder`): only the
 * template's ready pool pods, each at most once, in a random order, read into a WarmPod only
 * when drawn. Fast tier: a pure function over pod objects.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { POD_LABELS } from '../src/kubernetes/pod-spec.js';
import { readyWarmPodsInRandomOrder } from '../src/kubernetes/warm-pods.js';

const TEMPLATE = 'python';

/** A pool pod of `template`, Running with an IP unless `overrides` say otherwise. */
function poolPod(
  name: string,
  overrides: { template?: string; ready?: boolean; deleting?: boolean } = {},
): V1Pod {
  const ready = overrides.ready ?? true;
  return {
    metadata: {
      name,
      uid: `uid-${name}`,
      resourceVersion: '7',
      labels: { [POD_LABELS.warmPool]: overrides.template ?? TEMPLATE },
      creationTimestamp: new Date('2026-12-07T08:00:00Z'),
      ...(overrides.deleting ? { deletionTimestamp: new Date('2026-12-07T08:01:00Z') } : {}),
    },
    status: ready ? { phase: 'Running', podIP: '10.0.0.1' } : { phase: 'Pending' },
  };
}

function drawAll(objects: V1Pod[], random?: () => number): string[] {
  return [...readyWarmPodsInRandomOrder(objects, TEMPLATE, random).draws].map((pod) => pod.name);
}

describe('a claim draws warm pods', () => {
  it("draws each of the template's ready pool pods once, and no other pod", () => {
    const objects = [
      poolPod('a'),
      poolPod('pending', { ready: false }),
      poolPod('b'),
      poolPod('deleting', { deleting: true }),
      poolPod('other-pool', { template: 'node' }),
      { ...poolPod('no-uid'), metadata: { ...poolPod('no-uid').metadata, uid: undefined } },
      poolPod('c'),
    ];
    const picked = readyWarmPodsInRandomOrder(objects, TEMPLATE);
    expect(picked.ready).toBe(3);
    expect([...picked.draws].map((pod) => pod.name).sort()).toEqual(['a', 'b', 'c']);
  });

  it('reads a drawn pod as listed: its uid, resourceVersion, IP and the object to send back', () => {
    const object = poolPod('a');
    const [pod] = readyWarmPodsInRandomOrder([object], TEMPLATE).draws;
    expect(pod).toMatchObject({
      name: 'a',
      uid: 'uid-a',
      resourceVersion: '7',
      podIp: '10.0.0.1',
      phase: 'Running',
      terminating: false,
      createdAtMs: Date.parse('2026-12-07T08:00:00Z'),
    });
    expect(pod?.object).toBe(object);
  });

  it('draws in the order its random numbers choose (one Fisher-Yates step per draw)', () => {
    const objects = ['a', 'b', 'c', 'd'].map((name) => poolPod(name));
    // 0.99 of 4 left: index 3 (d); 0 of 3 left: index 0 (a), whose place takes c; then b, c.
    const script = [0.99, 0, 0.5, 0];
    expect(drawAll(objects, () => script.shift() ?? 0)).toEqual(['d', 'a', 'b', 'c']);
  });

  it('starts from each ready pod about equally often, so two claimers rarely collide', () => {
    const objects = ['a', 'b', 'c', 'd'].map((name) => poolPod(name));
    const firsts = new Map<string, number>();
    for (let i = 0; i < 4_000; i += 1) {
      const first = readyWarmPodsInRandomOrder(objects, TEMPLATE).draws.next().value?.name ?? '';
      firsts.set(first, (firsts.get(first) ?? 0) + 1);
    }
    // Expected 1,000 each (standard deviation about 27): bounds no fair draw misses.
    for (const name of ['a', 'b', 'c', 'd']) {
      expect(firsts.get(name), `pod ${name} first`).toBeGreaterThan(800);
      expect(firsts.get(name), `pod ${name} first`).toBeLessThan(1_200);
    }
  });

  it('reads only the pods it draws: one draw of 1,000 ready pods reads one creation time', () => {
    let reads = 0;
    const objects = Array.from({ length: 1_000 }, (_, i) => {
      const object = poolPod(`p${i}`);
      const metadata = object.metadata ?? {};
      const created = metadata.creationTimestamp;
      Object.defineProperty(metadata, 'creationTimestamp', {
        get: () => {
          reads += 1;
          return created;
        },
      });
      return object;
    });
    const picked = readyWarmPodsInRandomOrder(objects, TEMPLATE);
    expect(picked.ready).toBe(1_000);
    expect(picked.draws.next().done).toBe(false);
    expect(reads).toBe(1);
  });
});
