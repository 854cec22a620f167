/**
 * TENANT_LIMITS (docs/configuration.md, "Tenant limits"): a default for every tenant and
 * overrides per tenant, inline JSON or a file; a field left out comes from the level above; a
 * bad value stops the process naming the variable and the field. Also the pure rule that decides
 * whether a create fits (contract/tenant-limits.ts).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { limitsOf, loadConfig } from '../src/config/index.js';
import { DEFAULT_TENANT_LIMITS } from '../src/config/tenant-limits.js';
import { exceededLimit } from '../contract/index.js';

function limits(raw: string | undefined) {
  return loadConfig(raw === undefined ? {} : { TENANT_LIMITS: raw }).tenantLimits;
}

function refusal(raw: string): string {
  try {
    limits(raw);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error('expected TENANT_LIMITS to be refused');
}

describe('TENANT_LIMITS', () => {
  it('gives every tenant the built-in defaults when unset', () => {
    expect(limitsOf(limits(undefined), 'anyone')).toEqual(DEFAULT_TENANT_LIMITS);
    expect(loadConfig({}).quotaMetricsTenantLabel).toBe(false);
  });

  it("fills a tenant's entry from default, and default from the built-in defaults", () => {
    const config = limits(
      JSON.stringify({
        default: { sandboxes: 20, creates_per_second: 5 },
        tenants: { acme: { sandboxes: 100, cpu: 2.5 } },
      }),
    );
    expect(limitsOf(config, 'acme')).toEqual({
      ...DEFAULT_TENANT_LIMITS,
      sandboxes: 100,
      cpu: 2.5,
      createsPerSecond: 5,
    });
    expect(limitsOf(config, 'other')).toEqual({
      ...DEFAULT_TENANT_LIMITS,
      sandboxes: 20,
      createsPerSecond: 5,
    });
    // A tenant id that is an Object.prototype name is an ordinary tenant.
    expect(limitsOf(config, 'constructor')).toEqual(limitsOf(config, 'other'));
  });

  it('reads a JSON file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'tenant-limits-'));
    try {
      const file = join(dir, 'limits.json');
      writeFileSync(file, JSON.stringify({ tenants: { acme: { waits: 3 } } }));
      expect(limitsOf(limits(file), 'acme').waits).toBe(3);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [
      '{"tenants": {"acme": {"sandboxes": -1}}}',
      'TENANT_LIMITS: tenants.acme.sandboxes: must not be negative',
    ],
    [
      '{"default": {"creates_per_second": 0}}',
      'TENANT_LIMITS: default.creates_per_second: must be at least 1',
    ],
    ['{"default": {"create_burst": 0}}', 'TENANT_LIMITS: default.create_burst: must be at least 1'],
    [
      '{"tenants": {"acme": {"fairness_weight": 0}}}',
      'TENANT_LIMITS: tenants.acme.fairness_weight: must be at least 0.001',
    ],
    [
      '{"default": {"memory_mib": 1.5}}',
      'TENANT_LIMITS: default.memory_mib: must be a whole number of MiB',
    ],
    ['{"default": {"pods": 1}}', 'TENANT_LIMITS: default: Unrecognized key: "pods"'],
    ['{"default": ', 'TENANT_LIMITS: is not valid JSON'],
    [
      '/nowhere/limits.json',
      'TENANT_LIMITS: is neither inline JSON nor an existing file: /nowhere/limits.json',
    ],
  ])('refuses %s naming the field', (raw, message) => {
    expect(refusal(raw)).toContain(message);
  });

  it('refuses a QUOTA_METRICS_TENANT_LABEL that is not true or false', () => {
    expect(() => loadConfig({ QUOTA_METRICS_TENANT_LABEL: 'yes' })).toThrow(
      'QUOTA_METRICS_TENANT_LABEL: must be "true" or "false", got "yes"',
    );
  });
});

describe('exceededLimit', () => {
  const held = { sandboxes: 2, cpu: 0.3, memoryMib: 1024, diskMib: 4096 };
  const usage = { sandboxes: 1, cpu: 0.1, memoryMib: 512, diskMib: 2048 };

  it('lets a create that exactly fills every limit in (cpu compared in millicores)', () => {
    expect(exceededLimit(usage, { cpu: 0.2, memoryMib: 512, diskMib: 2048 }, held)).toBeUndefined();
  });

  it('names the first limit a create passes, with the usage and the request', () => {
    expect(exceededLimit(usage, { cpu: 0.201, memoryMib: 512, diskMib: 2048 }, held)).toEqual({
      limit: 'cpu',
      usage: 0.1,
      requested: 0.201,
      limitValue: 0.3,
    });
    expect(
      exceededLimit({ ...usage, sandboxes: 2 }, { cpu: 0.1, memoryMib: 1, diskMib: 1 }, held),
    ).toMatchObject({ limit: 'sandboxes', usage: 2, requested: 1, limitValue: 2 });
  });
});
