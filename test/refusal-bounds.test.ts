/**
 * The bound on the rootfs a believable refusal may state (src/verdict/refusal-bounds.ts,
 * `floorBoundOf`), as a table: a floor is learned per image, so the smallest largest-disk over
 * the templates of the pod's image bounds it.
 */
import { describe, expect, it } from 'vitest';
import { RESOURCE_LIMITS } from '../contract/index.js';
import { floorBoundOf, type BoundedTemplate } from '../src/verdict/refusal-bounds.js';

const CATALOG: Record<string, BoundedTemplate> = {
  alone: { image: 'example.test/alone:1', max_disk_mib: 4096 },
  large: { image: 'example.test/shared:1' },
  medium: { image: 'example.test/shared:1', max_disk_mib: 16384 },
  small: { image: 'example.test/shared:1', max_disk_mib: 8192 },
  unbounded: { image: 'example.test/unbounded:1' },
};

describe('floorBoundOf', () => {
  it.each([
    ['a template alone on its image: its own largest disk', 'alone', 4096, 'alone'],
    ['the largest template of a shared image: the smallest sibling', 'large', 8192, 'small'],
    ['a middle template of a shared image: the smallest sibling', 'medium', 8192, 'small'],
    ['the smallest template of a shared image: itself', 'small', 8192, 'small'],
    ['no max_disk_mib: the global limit', 'unbounded', RESOURCE_LIMITS.diskMib, 'unbounded'],
    [
      'a template not in the catalog: the global limit',
      'missing',
      RESOURCE_LIMITS.diskMib,
      'missing',
    ],
  ])('%s', (_, template, mib, by) => {
    expect(floorBoundOf(CATALOG, template)).toEqual({ mib, template: by });
  });

  it('no catalog, or no template named: the global limit', () => {
    expect(floorBoundOf(undefined, 'alone')).toEqual({
      mib: RESOURCE_LIMITS.diskMib,
      template: 'alone',
    });
    expect(floorBoundOf(CATALOG, undefined)).toEqual({
      mib: RESOURCE_LIMITS.diskMib,
      template: undefined,
    });
  });
});
