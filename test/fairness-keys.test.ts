/**
 * A tenant's fairness key and weight (src/temporal/priority.ts): its id as the key, hashed when
 * longer than Temporal's 64 bytes, and the weight TENANT_LIMITS gives it (default 1).
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config/index.js';
import { FAIRNESS_KEY_MAX_BYTES, fairnessKeyOf, tenantPriority } from '../src/temporal/priority.js';

describe('fairness keys', () => {
  it("is the tenant's id up to 64 bytes, and a hash of a longer one that stays distinct", () => {
    expect(fairnessKeyOf('acme')).toBe('acme');
    const atLimit = 'é'.repeat(32);
    expect(fairnessKeyOf(atLimit)).toBe(atLimit);
    const long = `${'x'.repeat(64)}-a`;
    const hashed = fairnessKeyOf(long);
    expect(hashed).toMatch(/^sha256:[0-9a-f]{56}$/);
    expect(Buffer.byteLength(hashed)).toBeLessThanOrEqual(FAIRNESS_KEY_MAX_BYTES);
    expect(fairnessKeyOf(`${'x'.repeat(64)}-b`)).not.toBe(hashed);
  });

  it('weighs a tenant as TENANT_LIMITS says, 1 by default and without TENANT_LIMITS', () => {
    const limits = loadConfig({
      TENANT_LIMITS:
        '{"default": {"fairness_weight": 2}, "tenants": {"acme": {"fairness_weight": 0.5}}}',
    }).tenantLimits;
    expect(tenantPriority(limits, 'acme')).toEqual({ fairnessKey: 'acme', fairnessWeight: 0.5 });
    expect(tenantPriority(limits, 'other')).toEqual({ fairnessKey: 'other', fairnessWeight: 2 });
    expect(tenantPriority(loadConfig({}).tenantLimits, 'acme').fairnessWeight).toBe(1);
    expect(tenantPriority(undefined, 'acme').fairnessWeight).toBe(1);
  });
});
