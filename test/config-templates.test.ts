/**
 * SANDBOX_TEMPLATES' re-placement fields (README, "Configuration"; docs/architecture.md,
 * "Re-placement"): `replace_on` and `max_placements` are read, defaulted and refused with a
 * message that names the field.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig, placementPolicyOf } from '../src/config/index.js';

function templates(json: unknown) {
  return loadConfig({ SANDBOX_TEMPLATES: JSON.stringify(json) }).templates;
}

function refusal(json: unknown): string {
  try {
    templates(json);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected SANDBOX_TEMPLATES to be refused');
}

describe('SANDBOX_TEMPLATES re-placement fields', () => {
  it('reads replace_on and defaults max_placements to 3', () => {
    const catalog = templates({ base: { image: 'i:1', replace_on: ['ResourceExhausted'] } });
    expect(placementPolicyOf(catalog.base!)).toEqual({
      replaceOn: ['ResourceExhausted'],
      maxPlacements: 3,
    });
  });

  it('keeps max_placements when given', () => {
    const catalog = templates({
      base: { image: 'i:1', replace_on: ['ResourceExhausted', 'Unavailable'], max_placements: 5 },
    });
    expect(placementPolicyOf(catalog.base!)).toEqual({
      replaceOn: ['ResourceExhausted', 'Unavailable'],
      maxPlacements: 5,
    });
  });

  it('gives a template without replace_on no policy (it never re-places)', () => {
    expect(placementPolicyOf(templates({ base: { image: 'i:1' } }).base!)).toBeUndefined();
    expect(placementPolicyOf(templates({ base: { image: 'i:1', replace_on: [] } }).base!)).toBe(
      undefined,
    );
  });

  it('refuses InvalidArgument in replace_on: it refuses the request, not the node', () => {
    expect(refusal({ base: { image: 'i:1', replace_on: ['InvalidArgument'] } })).toBe(
      'SANDBOX_TEMPLATES: base.replace_on.0: InvalidArgument refuses the request itself (every node would): it ends the create at once and cannot be re-placed',
    );
  });

  it('refuses a code that is not a gRPC code name, naming the allowed ones', () => {
    expect(refusal({ base: { image: 'i:1', replace_on: ['NoCapacity'] } })).toMatch(
      /^SANDBOX_TEMPLATES: base\.replace_on\.0: "NoCapacity" is not a gRPC code name \(one of Cancelled, .*ResourceExhausted.*\)$/,
    );
  });

  it('refuses a code named twice', () => {
    expect(refusal({ base: { image: 'i:1', replace_on: ['Unavailable', 'Unavailable'] } })).toBe(
      'SANDBOX_TEMPLATES: base.replace_on: names a code twice',
    );
  });

  it.each([0, 11, 2.5, '3'])('refuses max_placements %j', (value) => {
    expect(
      refusal({ base: { image: 'i:1', replace_on: ['Unavailable'], max_placements: value } }),
    ).toMatch(/^SANDBOX_TEMPLATES: base\.max_placements: /);
  });

  it('refuses max_placements without replace_on', () => {
    expect(refusal({ base: { image: 'i:1', max_placements: 2 } })).toBe(
      'SANDBOX_TEMPLATES: base.max_placements: needs replace_on: without it a create never uses a second placement',
    );
  });
});
