/**
 * TENANT_LIMITS (docs/configuration.md, "Tenant limits"): what one tenant may hold and how fast
 * it may ask, as a default for every tenant and overrides per tenant. Inline JSON or the path of
 * a JSON file, like SANDBOX_TEMPLATES:
 *
 *     {"default": {"sandboxes": 20, "creates_per_second": 5},
 *      "tenants": {"acme": {"sandboxes": 100}}}
 *
 * A field a tenant's entry leaves out comes from `default`; one `default` leaves out comes from
 * {@link DEFAULT_TENANT_LIMITS}. Enforced by the store's create transaction (sandboxes and their
 * resources: src/store/tenant-usage.ts; the create rate's bucket: src/store/create-rate.ts) and
 * src/api/tenant-admission.ts (waits).
 */
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import type { TenantLimits } from '../../contract/index.js';

/**
 * The limits of a tenant that neither TENANT_LIMITS' `default` nor its own entry sets: a shared
 * installation's (docs/configuration.md, "Tenant limits", says why each): 20 sandboxes at once
 * (E2B's default per team) of 40 cores, 80 GiB of memory and 400 GiB of disk in all (20 of 2
 * cores, 4 GiB and 20 GiB); 5 creates a second with a burst of 10; 100 long-polls and
 * synchronous creates waiting at once per API replica (a tenth of the per-process cap of 1,000
 * long-polls, src/api/long-poll.ts, so ten tenants cannot take them all).
 */
export const DEFAULT_TENANT_LIMITS: Readonly<TenantLimits> = {
  sandboxes: 20,
  cpu: 40,
  memoryMib: 80 * 1024,
  diskMib: 400 * 1024,
  createsPerSecond: 5,
  createBurst: 10,
  waits: 100,
  fairnessWeight: 1,
};

/** TENANT_LIMITS as parsed: the default of every tenant and each tenant's own limits. */
export interface TenantLimitsConfig {
  /** Every field filled: TENANT_LIMITS' `default` over {@link DEFAULT_TENANT_LIMITS}. */
  default: TenantLimits;
  /** tenant id -> its limits, every field filled (its entry over `default`). */
  tenants: Record<string, TenantLimits>;
}

const count = (what: string) =>
  z.number().int(`must be a whole number of ${what}`).min(0, 'must not be negative');

/** One entry as TENANT_LIMITS spells it (snake_case, every field optional). */
const limitsSchema = z
  .object({
    sandboxes: count('sandboxes'),
    cpu: z.number().min(0, 'must not be negative'),
    memory_mib: count('MiB'),
    disk_mib: count('MiB'),
    creates_per_second: z.number().int('must be a whole number').min(1, 'must be at least 1'),
    // The bucket's size: below one token it would never admit a create.
    create_burst: z.number().int('must be a whole number').min(1, 'must be at least 1'),
    waits: count('requests'),
    // Temporal clamps weights to [0.001, 1000] (Priority.fairnessWeight).
    fairness_weight: z
      .number()
      .min(0.001, 'must be at least 0.001')
      .max(1000, 'must be at most 1000'),
  })
  .partial()
  .strict();

const tenantLimitsSchema = z
  .object({
    default: limitsSchema.optional(),
    tenants: z.record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/), limitsSchema).optional(),
  })
  .strict();

type LimitsEntry = z.infer<typeof limitsSchema>;

/** An entry over the limits it overrides. */
function over(base: TenantLimits, entry: LimitsEntry | undefined): TenantLimits {
  return {
    sandboxes: entry?.sandboxes ?? base.sandboxes,
    cpu: entry?.cpu ?? base.cpu,
    memoryMib: entry?.memory_mib ?? base.memoryMib,
    diskMib: entry?.disk_mib ?? base.diskMib,
    createsPerSecond: entry?.creates_per_second ?? base.createsPerSecond,
    createBurst: entry?.create_burst ?? base.createBurst,
    waits: entry?.waits ?? base.waits,
    fairnessWeight: entry?.fairness_weight ?? base.fairnessWeight,
  };
}

/** Thrown by {@link parseTenantLimits}; src/config/index.ts turns it into a ConfigError. */
export class TenantLimitsProblem extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TenantLimitsProblem';
  }
}

/**
 * Parses TENANT_LIMITS: unset or empty gives every tenant {@link DEFAULT_TENANT_LIMITS}.
 * @param raw inline JSON (starting with `{`) or the path of a JSON file
 * @throws TenantLimitsProblem naming the file that is missing, or the first invalid field
 *   (`tenants.acme.sandboxes: must not be negative`)
 */
export function parseTenantLimits(raw: string | undefined): TenantLimitsConfig {
  if (raw === undefined || raw.trim() === '') {
    return { default: { ...DEFAULT_TENANT_LIMITS }, tenants: {} };
  }
  let text = raw.trim();
  if (!text.startsWith('{')) {
    if (!existsSync(text)) {
      throw new TenantLimitsProblem(`is neither inline JSON nor an existing file: ${text}`);
    }
    text = readFileSync(text, 'utf8');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new TenantLimitsProblem(`is not valid JSON (${(err as Error).message})`);
  }
  const parsed = tenantLimitsSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new TenantLimitsProblem(
      `${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const fallback = over(DEFAULT_TENANT_LIMITS, parsed.data.default);
  const tenants = Object.fromEntries(
    Object.entries(parsed.data.tenants ?? {}).map(([tenant, entry]) => [
      tenant,
      over(fallback, entry),
    ]),
  );
  return { default: fallback, tenants };
}

/** The limits of `tenant`: its own entry, else the default. */
export function limitsOf(config: TenantLimitsConfig, tenant: string): TenantLimits {
  return Object.hasOwn(config.tenants, tenant) ? config.tenants[tenant]! : config.default;
}
