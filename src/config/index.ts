/**
 * The service's configuration, read from the environment (docs/configuration.md). Every process
 * (api, worker, embedded stack) calls {@link loadConfig} once at start; invalid values stop the
 * process with a message that names the variable.
 */
import {
  parseSecretKeyRing,
  SecretKeyRingError,
  type SecretKeyRing,
} from '../webhooks/secret-box.js';
import { existsSync, readFileSync } from 'node:fs';
import { z } from 'zod';
import { OIDC_VARIABLES, OidcConfigProblem, parseOidc, type OidcConfig } from './oidc.js';
import { isLogLevel, LOG_LEVELS } from './log-level.js';
import {
  parseTemporalCredentials,
  refusePlaintextApiKey,
  TEMPORAL_CONNECTION_VARIABLES,
  TemporalConnectionProblem,
  type TemporalCredentials,
} from './temporal-connection.js';
import {
  parseRetention,
  RETENTION_CONFIG_VARIABLES,
  RetentionConfigProblem,
  type RetentionConfig,
} from './retention.js';
import { podSettingsFields, type TemplatePodFields } from './pod-settings.js';
import { CidrListError, parseCidrList } from '../webhooks/ssrf-guard.js';

import {
  parseTenantLimits,
  TenantLimitsProblem,
  type TenantLimitsConfig,
} from './tenant-limits.js';

export type { OidcConfig } from './oidc.js';
export { limitsOf, type TenantLimitsConfig } from './tenant-limits.js';
export { runsAsRoot } from './pod-settings.js';
import {
  DEFAULT_MAX_PLACEMENTS,
  MAX_PLACEMENTS_LIMIT,
  REQUEST_REFUSAL_CODE,
  RESOURCE_LIMITS,
  SHIM_CODES,
  MAX_TTL_LIMIT_MS,
  DEFAULT_WARM_POOL_MAX_PENDING,
  MAX_WARM_POOL_SIZE,
  coresOf,
  parseCpuQuantity,
  formatDuration,
  parseDurationMs,
  type ShimCode,
  type WarmPoolSpec,
} from '../../contract/index.js';

/**
 * One entry of the template catalog. The pod-isolation fields (`run_as_root`, the older
 * `run_as_non_root`, `runtime_class_name`, `node_selector`, `tolerations`) are
 * src/config/pod-settings.ts's.
 */
export interface TemplateConfig extends TemplatePodFields {
  /** Container image of the sandbox. */
  image: string;
  /** A known floor for the root filesystem in MiB, if the operator knows it; optional. */
  rootfs_mib?: number;
  /**
   * The largest `disk_mib` a create of this template may ask for, in MiB (default and upper
   * limit: RESOURCE_LIMITS.diskMib). A larger request answers 400; a node refusal claiming a
   * rootfs above it decides and teaches nothing (src/verdict/refusal-bounds.ts).
   */
  max_disk_mib?: number;
  /**
   * The runtime shim codes (`[space-err=<Code>]`) on which a create deletes its pod and tries
   * another node, e.g. `["ResourceExhausted", "Unavailable"]` (docs/architecture.md,
   * "Re-placement"). Absent or empty: a refusal never moves the pod (as before re-placement).
   */
  replace_on?: ShimCode[];
  /**
   * How many placements (pods on distinct nodes, the first included) a create may use, 1 to
   * 10; default 3 when `replace_on` is set. Only meaningful with `replace_on`.
   */
  max_placements?: number;
  /**
   * The lifetime a create of this template gets when it asks for none, as an AIP-142 duration
   * (`"3600s"`), counted from running (docs/api.md, "Lifetimes"). Absent: no expiry.
   */
  default_ttl?: string;
  /**
   * The longest lifetime a create or an extend may give a sandbox of this template, counted
   * from running (`"86400s"`); a longer `ttl` answers 400. Absent: no bound but
   * MAX_TTL_LIMIT_MS (366 days).
   */
  max_ttl?: string;
  /**
   * A warm pool (docs/architecture.md, "Warm pools"): `size` ready pods made ahead of any create
   * with these `resources` (cpu a Kubernetes quantity, sizes in MiB); a create asking for exactly
   * them claims one instead of making a pod. Absent: every create is cold. The operator's scale
   * route (`PUT /admin/v1/warm-pools/{template}/scale`) overrides `size` without a restart.
   */
  warm_pool?: {
    size: number;
    resources: { cpu: number | string; memory_mib: number; disk_mib: number };
    /** Pods the pool has made but that are not ready yet, at most (default 10). */
    max_pending?: number;
  };
}

/**
 * A template's warm pool as the contract spells it (cpu in cores), or undefined when it declares
 * none. The configured size; the scale route's override is the store's (src/store/warm-pools.ts).
 */
export function warmPoolOf(template: Pick<TemplateConfig, 'warm_pool'>): WarmPoolSpec | undefined {
  const pool = template.warm_pool;
  if (!pool) return undefined;
  const cpu = parseCpuQuantity(pool.resources.cpu, RESOURCE_LIMITS.cpu);
  if (!('millicores' in cpu)) return undefined; // refused by the schema at start
  return {
    size: pool.size,
    maxPending: pool.max_pending ?? DEFAULT_WARM_POOL_MAX_PENDING,
    resources: {
      cpu: coresOf(cpu.millicores),
      memoryMib: pool.resources.memory_mib,
      diskMib: pool.resources.disk_mib,
    },
  };
}

/**
 * A template's lifetime bounds in ms (`default_ttl`, `max_ttl`): undefined where the template
 * sets none.
 */
export function lifetimeOf(template: Pick<TemplateConfig, 'default_ttl' | 'max_ttl'>): {
  defaultMs?: number;
  maxMs?: number;
} {
  return {
    defaultMs:
      template.default_ttl === undefined ? undefined : parseDurationMs(template.default_ttl),
    maxMs: template.max_ttl === undefined ? undefined : parseDurationMs(template.max_ttl),
  };
}

/**
 * A template's re-placement policy (docs/architecture.md, "Re-placement"): its `replace_on`
 * codes and `max_placements` (default {@link DEFAULT_MAX_PLACEMENTS}); undefined when it names
 * no code, so the create behaves as before re-placement.
 */
export function placementPolicyOf(
  template: TemplateConfig,
): { replaceOn: ShimCode[]; maxPlacements: number } | undefined {
  if (!template.replace_on?.length) return undefined;
  return {
    replaceOn: [...template.replace_on],
    maxPlacements: template.max_placements ?? DEFAULT_MAX_PLACEMENTS,
  };
}

/** The parsed configuration. Durations are in ms. */
export interface Config {
  port: number;
  /** token -> tenant id; empty when API_TOKENS is unset and OIDC is on. */
  apiTokens: Map<string, string>;
  /**
   * token -> operator name, from ADMIN_TOKENS (`operator:token` pairs): the only credentials of
   * the operator routes (`/admin/v1/…`, docs/api.md "Operator routes"); empty (the default):
   * those routes are not served. No token may also be a tenant's (API_TOKENS).
   */
  adminTokens: Map<string, string>;
  /**
   * Calling Temporal namespace -> tenant, from NEXUS_TENANTS (`namespace:tenant` pairs): the
   * namespaces whose workflows may call the `sandbox` Nexus service, and the tenant each acts
   * for (docs/nexus.md; docs/security.md, "Nexus callers"). Empty (the default): the worker
   * serves no Nexus service.
   */
  nexusTenants: Map<string, string>;
  /** True when API_TOKENS and OIDC_ISSUER were unset and the dev token is in use. */
  devToken: boolean;
  /**
   * ALLOW_DEV_TOKEN=true: `npm run api` may start with the dev token (development only); without
   * it, `npm run api` refuses to start with neither API_TOKENS nor OIDC_ISSUER. `npm start`
   * always may.
   */
  allowDevToken: boolean;
  /** JWT bearer verification (docs/security.md); unset when OIDC_ISSUER is. */
  oidc?: OidcConfig;
  /** Unset: the embedded stack starts a dev server. */
  temporalAddress?: string;
  /**
   * TLS, mTLS client certificate and API key of the connection to TEMPORAL_ADDRESS, from the
   * Temporal CLI's variables (src/config/temporal-connection.ts); `{}` is plaintext.
   */
  temporalCredentials: TemporalCredentials;
  temporalNamespace: string;
  taskQueue: string;
  /**
   * Base URL of the Temporal UI (e.g. `http://127.0.0.1:8233`); when set, each operation links to
   * its workflow's page. The embedded stack sets it to its dev server's UI.
   */
  temporalUiUrl?: string;
  /** Unset: the simulated cluster. */
  kubeconfig?: string;
  sandboxNamespace: string;
  dataDir: string;
  /** Unset: SQLite in dataDir. */
  databaseUrl?: string;
  createDeadlineMs: number;
  syncReadinessBudgetMs: number;
  /** First back-off delay's upper bound of the informers' retries, in ms. */
  watchRetryDelayMs: number;
  /**
   * `timeoutSeconds` of the informers' watches: under client-node's 30 s idle cut, so the
   * apiserver ends a quiet stream (with a bookmark) before the client cuts it.
   */
  watchTimeoutSeconds: number;
  templates: Record<string, TemplateConfig>;
  /** TENANT_LIMITS: every tenant's limits (src/config/tenant-limits.ts). */
  tenantLimits: TenantLimitsConfig;
  /**
   * QUOTA_METRICS_TENANT_LABEL=true: the refusal counter gets a `tenant` label too (one series
   * per tenant and limit: mind the cardinality). Default false.
   */
  quotaMetricsTenantLabel: boolean;
  logLevel: string;
  /**
   * LOG_FORMAT: `json` writes pino JSON lines everywhere, a failed start included; unset: pretty
   * lines on a terminal, JSON off one, and a failed start as one plain line on stderr
   * (src/process/startup-failure.ts). The launchers (Dockerfile, docker-compose.yml, deploy/) set `json`.
   */
  logFormat?: 'json';
  /** Port of the worker's Prometheus `/metrics` (the API serves its own on PORT). */
  metricsPort: number;
  /** How often the worker sweeps orphan pods, in ms; 0 turns the sweeper off. */
  orphanSweepIntervalMs: number;
  /**
   * Workflows one worker keeps cached (the SDK's `maxCachedWorkflows`); 0 keeps none
   * (docs/architecture.md, "Workflow cache").
   */
  maxCachedWorkflows: number;
  /**
   * How long the API keeps an idle keep-alive connection open, in ms (`HTTP_KEEP_ALIVE_TIMEOUT_MS`,
   * default {@link DEFAULT_HTTP_KEEP_ALIVE_TIMEOUT_MS}): longer than the idle timeout of the load
   * balancer or client in front of it (src/api/http-server.ts).
   */
  httpKeepAliveTimeoutMs: number;
  /**
   * Webhook delivery (docs/webhooks.md): CIDRs a webhook may reach although they are private
   * (WEBHOOK_ALLOWED_CIDRS, default none), one attempt's timeout in ms (WEBHOOK_TIMEOUT_MS,
   * default 10 000, at most 60 000), response bytes read at most (WEBHOOK_MAX_RESPONSE_BYTES,
   * default 65 536), and how long a rotated-out secret still signs, in ms
   * (WEBHOOK_SECRET_GRACE_MS, default 86 400 000: 24 h); the keys that seal signing secrets at
   * rest (WEBHOOK_SECRET_KEYS, `id:base64key` pairs, the first seals; unset: stored in clear).
   */
  webhooks: {
    allowedCidrs: string[];
    timeoutMs: number;
    maxResponseBytes: number;
    secretGraceMs: number;
    secretKeys: SecretKeyRing | undefined;
  };
  /**
   * Rows that age out (src/config/retention.ts, docs/configuration.md "Retention"): each kind's
   * retention (`*_RETENTION_HOURS`), the purge's batch size, per-run cap and interval.
   */
  retention: RetentionConfig;
}

/** Thrown by {@link loadConfig}; the message starts with the variable's name. */
export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    message: string,
  ) {
    super(`${variable}: ${message}`);
    this.name = 'ConfigError';
  }
}

/**
 * Every environment variable {@link loadConfig} reads (docs/configuration.md), for deployment
 * files and their tests (test/compose.test.ts checks docker-compose.yml against this list, and
 * that loadConfig reads exactly these).
 */
export const CONFIG_VARIABLES = [
  'PORT',
  'API_TOKENS',
  'ADMIN_TOKENS',
  'NEXUS_TENANTS',
  'ALLOW_DEV_TOKEN',
  'TEMPORAL_ADDRESS',
  'TEMPORAL_NAMESPACE',
  'TEMPORAL_TASK_QUEUE',
  'TEMPORAL_UI_URL',
  ...TEMPORAL_CONNECTION_VARIABLES,
  'KUBECONFIG',
  'SANDBOX_NAMESPACE',
  'DATA_DIR',
  'DATABASE_URL',
  'CREATE_DEADLINE_MS',
  'SYNC_READINESS_BUDGET_MS',
  'WATCH_RETRY_DELAY_MS',
  'WATCH_TIMEOUT_SECONDS',
  'SANDBOX_TEMPLATES',
  'TENANT_LIMITS',
  'QUOTA_METRICS_TENANT_LABEL',
  'LOG_LEVEL',
  'LOG_FORMAT',
  'METRICS_PORT',
  'ORPHAN_SWEEP_INTERVAL_MS',
  'MAX_CACHED_WORKFLOWS',
  'HTTP_KEEP_ALIVE_TIMEOUT_MS',
  'WEBHOOK_ALLOWED_CIDRS',
  'WEBHOOK_TIMEOUT_MS',
  'WEBHOOK_MAX_RESPONSE_BYTES',
  'WEBHOOK_SECRET_GRACE_MS',
  'WEBHOOK_SECRET_KEYS',
  ...RETENTION_CONFIG_VARIABLES,
  ...OIDC_VARIABLES,
] as const;

/**
 * Workflows one worker keeps cached unless MAX_CACHED_WORKFLOWS says otherwise: a waiting
 * create's workflow stays cached until its wait ends (up to the 30-minute deadline) unless the
 * cache is full, when the least recently used one (an idle waiting create) is evicted and
 * replayed from its history (15 events) at its next workflow task. Measured
 * (tools/measure-workflow-cache.ts; docs/architecture.md, "Workflow cache"): about 0.25 MiB of
 * worker RSS per cached workflow, and a miss adds about 64 ms to that one workflow task. 250
 * holds every create in flight at the rates this machine sustains (a create is active for a few
 * seconds) for about 64 MiB, and keeps RSS at 1,000 waiting within 1.3x of 1 waiting.
 */
export const DEFAULT_MAX_CACHED_WORKFLOWS = 250;

/**
 * How long the API keeps an idle keep-alive connection open unless HTTP_KEEP_ALIVE_TIMEOUT_MS
 * says otherwise, in ms: above the 60 s idle timeout of common load balancers (AWS's Application
 * Load Balancer; Node's own default is 5 s), so the server is never the side that closes a
 * connection a request is already on its way over (src/api/http-server.ts).
 */
export const DEFAULT_HTTP_KEEP_ALIVE_TIMEOUT_MS = 65_000;

/** The dev tenant and token used when API_TOKENS is unset (docs/api.md). */
export const DEV_TENANT = 'dev';
export const DEV_TOKEN = 'dev-token';

/** The template catalog used when SANDBOX_TEMPLATES is unset. */
export const DEFAULT_TEMPLATES: Record<string, TemplateConfig> = {
  base: { image: 'ghcr.io/durable-sandbox/base:1' },
};

const shimCode = z.string().superRefine((code, ctx) => {
  if (code === REQUEST_REFUSAL_CODE) {
    ctx.addIssue({
      code: 'custom',
      message:
        `${REQUEST_REFUSAL_CODE} refuses the request itself (every node would): it ends the ` +
        'create at once and cannot be re-placed',
    });
  } else if (!(SHIM_CODES as readonly string[]).includes(code)) {
    ctx.addIssue({
      code: 'custom',
      message: `"${code}" is not a gRPC code name (one of ${SHIM_CODES.filter((c) => c !== REQUEST_REFUSAL_CODE).join(', ')})`,
    });
  }
});
const ttlField = z.string().superRefine((text, ctx) => {
  const ms = parseDurationMs(text);
  if (ms === undefined || ms <= 0 || ms > MAX_TTL_LIMIT_MS) {
    ctx.addIssue({
      code: 'custom',
      message: `must be a duration such as "3600s", above 0s and at most ${formatDuration(MAX_TTL_LIMIT_MS)}`,
    });
  }
});
/** An integer from `min` to `max`, one message for each way to miss (`must be an integer from …`). */
function integerFrom(min: number, max: number) {
  const message = `must be an integer from ${min} to ${max}`;
  return z.number().int(message).min(min, message).max(max, message);
}
const templateSchema = z
  .object({
    image: z.string().min(1),
    rootfs_mib: z.number().int().positive().optional(),
    max_disk_mib: z
      .number()
      .int()
      .positive()
      .max(RESOURCE_LIMITS.diskMib, `must be at most ${RESOURCE_LIMITS.diskMib}`)
      .optional(),
    replace_on: z
      .array(shimCode)
      .refine((codes) => new Set(codes).size === codes.length, 'names a code twice')
      .optional(),
    max_placements: integerFrom(1, MAX_PLACEMENTS_LIMIT).optional(),
    default_ttl: ttlField.optional(),
    max_ttl: ttlField.optional(),
    warm_pool: z
      .strictObject({
        size: integerFrom(0, MAX_WARM_POOL_SIZE),
        resources: z.strictObject({
          cpu: z.union([z.number(), z.string()]).superRefine((value, ctx) => {
            const parsed = parseCpuQuantity(value, RESOURCE_LIMITS.cpu);
            if ('problem' in parsed) ctx.addIssue({ code: 'custom', message: parsed.problem });
          }),
          memory_mib: z.number().int().positive().max(RESOURCE_LIMITS.memoryMib),
          disk_mib: z.number().int().positive().max(RESOURCE_LIMITS.diskMib),
        }),
        max_pending: integerFrom(1, MAX_WARM_POOL_SIZE).optional(),
      })
      .optional(),
    ...podSettingsFields,
  })
  .strict()
  .superRefine((template, ctx) => {
    const { defaultMs, maxMs } = lifetimeOf(template);
    if (defaultMs !== undefined && maxMs !== undefined && defaultMs > maxMs) {
      ctx.addIssue({
        code: 'custom',
        path: ['default_ttl'],
        message: `is above max_ttl (${template.max_ttl}): no create could use it`,
      });
    }
    if (
      template.run_as_root !== undefined &&
      template.run_as_non_root !== undefined &&
      template.run_as_root === template.run_as_non_root
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['run_as_non_root'],
        message: `contradicts run_as_root: ${template.run_as_root}; set run_as_root alone`,
      });
    }
    if (template.max_placements !== undefined && !template.replace_on?.length) {
      ctx.addIssue({
        code: 'custom',
        path: ['max_placements'],
        message: 'needs replace_on: without it a create never uses a second placement',
      });
    }
    const poolDisk = template.warm_pool?.resources.disk_mib;
    if (
      poolDisk !== undefined &&
      template.max_disk_mib !== undefined &&
      poolDisk > template.max_disk_mib
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['warm_pool', 'resources', 'disk_mib'],
        message: 'is above max_disk_mib: no create could claim a pod of the pool',
      });
    }
    if (
      template.rootfs_mib !== undefined &&
      template.max_disk_mib !== undefined &&
      template.rootfs_mib > template.max_disk_mib
    ) {
      ctx.addIssue({
        code: 'custom',
        path: ['rootfs_mib'],
        message: 'is above max_disk_mib: no create of the template could run',
      });
    }
  });
const templatesSchema = z
  .record(z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/), templateSchema)
  .refine((catalog) => Object.keys(catalog).length > 0, 'must name at least one template');

function positiveInt(
  env: NodeJS.ProcessEnv,
  name: string,
  fallback: number,
  max = 2 ** 31,
): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw.trim()) || Number(raw) <= 0 || Number(raw) > max) {
    throw new ConfigError(name, `must be a positive integer up to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function nonEmpty(env: NodeJS.ProcessEnv, name: string, fallback?: string): string | undefined {
  const raw = env[name]?.trim();
  return raw ? raw : fallback;
}

/** A tenant id, from API_TOKENS or a JWT's tenant claim: `[A-Za-z0-9_.-]{1,64}`. */
export const TENANT_ID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;

function parseTokens(
  raw: string | undefined,
  oidc: boolean,
): { tokens: Map<string, string>; dev: boolean } {
  if (raw === undefined || raw.trim() === '') {
    // With OIDC on, no static token unless API_TOKENS names some: never the dev token.
    if (oidc) return { tokens: new Map(), dev: false };
    return { tokens: new Map([[DEV_TOKEN, DEV_TENANT]]), dev: true };
  }
  const tokens = new Map<string, string>();
  for (const pair of raw.split(',')) {
    const separator = pair.indexOf(':');
    const tenant = pair.slice(0, separator).trim();
    const token = pair.slice(separator + 1).trim();
    if (separator <= 0 || !tenant || !token) {
      throw new ConfigError('API_TOKENS', 'must be comma-separated tenant:token pairs');
    }
    if (!TENANT_ID_PATTERN.test(tenant)) {
      throw new ConfigError('API_TOKENS', `tenant "${tenant}" must match [A-Za-z0-9_.-]{1,64}`);
    }
    if (tokens.has(token)) throw new ConfigError('API_TOKENS', 'a token is listed twice');
    tokens.set(token, tenant);
  }
  return { tokens, dev: false };
}

/**
 * NEXUS_TENANTS: comma-separated `namespace:tenant` pairs; unset or empty: none.
 * @throws ConfigError naming NEXUS_TENANTS for a malformed pair, a tenant id that does not match
 *   {@link TENANT_ID_PATTERN}, or a namespace listed twice
 */
function parseNexusTenants(raw: string | undefined): Map<string, string> {
  const tenants = new Map<string, string>();
  for (const pair of (raw ?? '').split(',')) {
    if (!pair.trim()) continue;
    const separator = pair.lastIndexOf(':');
    const namespace = pair.slice(0, separator).trim();
    const tenant = pair.slice(separator + 1).trim();
    if (separator <= 0 || !namespace || !TENANT_ID_PATTERN.test(tenant)) {
      throw new ConfigError(
        'NEXUS_TENANTS',
        `"${pair.trim()}" is not a namespace:tenant pair (tenant: [A-Za-z0-9_.-]{1,64})`,
      );
    }
    if (tenants.has(namespace)) {
      throw new ConfigError('NEXUS_TENANTS', `namespace ${namespace} is listed twice`);
    }
    tenants.set(namespace, tenant);
  }
  return tenants;
}

/**
 * ADMIN_TOKENS: comma-separated `operator:token` pairs (the operator's name is logged with each
 * admin request), disjoint from the tenants' tokens.
 * @throws ConfigError on a malformed pair, a token listed twice, or a token that is a tenant's
 */
function parseAdminTokens(
  raw: string | undefined,
  tenantTokens: ReadonlyMap<string, string>,
): Map<string, string> {
  const tokens = new Map<string, string>();
  if (raw === undefined || raw.trim() === '') return tokens;
  for (const pair of raw.split(',')) {
    const separator = pair.indexOf(':');
    const operator = pair.slice(0, separator).trim();
    const token = pair.slice(separator + 1).trim();
    if (separator <= 0 || !TENANT_ID_PATTERN.test(operator) || !token) {
      throw new ConfigError(
        'ADMIN_TOKENS',
        'must be comma-separated operator:token pairs (operator [A-Za-z0-9_.-]{1,64})',
      );
    }
    if (tokens.has(token)) throw new ConfigError('ADMIN_TOKENS', 'a token is listed twice');
    if (tenantTokens.has(token)) {
      throw new ConfigError('ADMIN_TOKENS', "a token is also a tenant's token (API_TOKENS)");
    }
    tokens.set(token, operator);
  }
  return tokens;
}

function parseTemplates(raw: string | undefined): Record<string, TemplateConfig> {
  if (raw === undefined || raw.trim() === '') return DEFAULT_TEMPLATES;
  let text = raw.trim();
  if (!text.startsWith('{')) {
    if (!existsSync(text)) {
      throw new ConfigError(
        'SANDBOX_TEMPLATES',
        `is neither inline JSON nor an existing file: ${text}`,
      );
    }
    text = readFileSync(text, 'utf8');
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError('SANDBOX_TEMPLATES', `is not valid JSON (${(err as Error).message})`);
  }
  const parsed = templatesSchema.safeParse(json);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ConfigError(
      'SANDBOX_TEMPLATES',
      `${issue?.path.join('.') || '(root)'}: ${issue?.message ?? 'invalid'}`,
    );
  }
  return parsed.data as Record<string, TemplateConfig>;
}

/**
 * Reads and checks the configuration.
 * @param env the environment to read (default `process.env`)
 * @throws ConfigError naming the first invalid variable
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  let oidc: OidcConfig | undefined;
  try {
    oidc = parseOidc(env);
  } catch (err) {
    if (err instanceof OidcConfigProblem) throw new ConfigError(err.variable, err.message);
    throw err;
  }
  const { tokens, dev } = parseTokens(env.API_TOKENS, oidc !== undefined);
  const allowDevToken = (env.ALLOW_DEV_TOKEN ?? '').trim();
  if (!['', 'true', 'false'].includes(allowDevToken)) {
    throw new ConfigError('ALLOW_DEV_TOKEN', `must be "true" or "false", got "${allowDevToken}"`);
  }
  const databaseUrl = nonEmpty(env, 'DATABASE_URL');
  if (databaseUrl && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL', 'must be a postgres:// or postgresql:// URL');
  }
  const temporalAddress = nonEmpty(env, 'TEMPORAL_ADDRESS');
  if (temporalAddress && !/^[^\s:]+:\d+$/.test(temporalAddress)) {
    throw new ConfigError('TEMPORAL_ADDRESS', `must be host:port, got "${temporalAddress}"`);
  }
  let temporalCredentials: TemporalCredentials;
  try {
    temporalCredentials = parseTemporalCredentials(env);
    refusePlaintextApiKey(temporalAddress, temporalCredentials);
  } catch (err) {
    if (err instanceof TemporalConnectionProblem) throw new ConfigError(err.variable, err.message);
    throw err;
  }
  const temporalUiUrl = nonEmpty(env, 'TEMPORAL_UI_URL')?.replace(/\/+$/, '');
  if (temporalUiUrl && !/^https?:\/\/\S+$/.test(temporalUiUrl)) {
    throw new ConfigError(
      'TEMPORAL_UI_URL',
      `must be an http:// or https:// URL, got "${temporalUiUrl}"`,
    );
  }
  const kubeconfig = nonEmpty(env, 'KUBECONFIG');
  const sandboxNamespace = nonEmpty(env, 'SANDBOX_NAMESPACE', 'sandboxes') as string;
  if (!/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(sandboxNamespace)) {
    throw new ConfigError(
      'SANDBOX_NAMESPACE',
      `"${sandboxNamespace}" is not a valid namespace name`,
    );
  }
  const logLevel = nonEmpty(env, 'LOG_LEVEL', 'info') as string;
  if (!isLogLevel(logLevel)) {
    throw new ConfigError(
      'LOG_LEVEL',
      `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`,
    );
  }
  let tenantLimits: TenantLimitsConfig;
  try {
    tenantLimits = parseTenantLimits(env.TENANT_LIMITS);
  } catch (err) {
    if (err instanceof TenantLimitsProblem) throw new ConfigError('TENANT_LIMITS', err.message);
    throw err;
  }
  const tenantLabel = (env.QUOTA_METRICS_TENANT_LABEL ?? '').trim();
  if (!['', 'true', 'false'].includes(tenantLabel)) {
    throw new ConfigError(
      'QUOTA_METRICS_TENANT_LABEL',
      `must be "true" or "false", got "${tenantLabel}"`,
    );
  }
  const logFormat = nonEmpty(env, 'LOG_FORMAT');
  if (logFormat !== undefined && logFormat !== 'json') {
    throw new ConfigError('LOG_FORMAT', `must be "json" or unset, got "${logFormat}"`);
  }
  return {
    port: positiveInt(env, 'PORT', 8080, 65535),
    apiTokens: tokens,
    adminTokens: parseAdminTokens(env.ADMIN_TOKENS, tokens),
    nexusTenants: parseNexusTenants(env.NEXUS_TENANTS),
    devToken: dev,
    allowDevToken: allowDevToken === 'true',
    oidc,
    temporalAddress,
    temporalCredentials,
    temporalNamespace: nonEmpty(env, 'TEMPORAL_NAMESPACE', 'default') as string,
    taskQueue: nonEmpty(env, 'TEMPORAL_TASK_QUEUE', 'sandbox-create') as string,
    temporalUiUrl,
    kubeconfig,
    sandboxNamespace,
    dataDir: nonEmpty(env, 'DATA_DIR', '.data') as string,
    databaseUrl,
    createDeadlineMs: positiveInt(env, 'CREATE_DEADLINE_MS', 1_800_000),
    syncReadinessBudgetMs: positiveInt(env, 'SYNC_READINESS_BUDGET_MS', 120_000),
    watchRetryDelayMs: positiveInt(env, 'WATCH_RETRY_DELAY_MS', 1_000),
    watchTimeoutSeconds: positiveInt(env, 'WATCH_TIMEOUT_SECONDS', 25, 29),
    templates: parseTemplates(env.SANDBOX_TEMPLATES),
    tenantLimits,
    quotaMetricsTenantLabel: tenantLabel === 'true',
    logLevel,
    logFormat,
    metricsPort: positiveInt(env, 'METRICS_PORT', 9464, 65535),
    orphanSweepIntervalMs:
      env.ORPHAN_SWEEP_INTERVAL_MS?.trim() === '0'
        ? 0
        : positiveInt(env, 'ORPHAN_SWEEP_INTERVAL_MS', 60_000),
    maxCachedWorkflows:
      env.MAX_CACHED_WORKFLOWS?.trim() === '0'
        ? 0
        : positiveInt(env, 'MAX_CACHED_WORKFLOWS', DEFAULT_MAX_CACHED_WORKFLOWS),
    httpKeepAliveTimeoutMs: positiveInt(
      env,
      'HTTP_KEEP_ALIVE_TIMEOUT_MS',
      DEFAULT_HTTP_KEEP_ALIVE_TIMEOUT_MS,
    ),
    webhooks: {
      allowedCidrs: parseAllowedCidrs(env.WEBHOOK_ALLOWED_CIDRS),
      timeoutMs: positiveInt(env, 'WEBHOOK_TIMEOUT_MS', 10_000, 60_000),
      maxResponseBytes: positiveInt(env, 'WEBHOOK_MAX_RESPONSE_BYTES', 65_536, 16 * 1024 * 1024),
      secretGraceMs: positiveInt(env, 'WEBHOOK_SECRET_GRACE_MS', 86_400_000, 30 * 86_400_000),
      secretKeys: parseSecretKeys(env.WEBHOOK_SECRET_KEYS),
    },
    retention: parseRetentionVariables(env),
  };
}

/** The retention variables, checked (src/config/retention.ts). */
function parseRetentionVariables(env: NodeJS.ProcessEnv): RetentionConfig {
  try {
    return parseRetention(env);
  } catch (err) {
    if (err instanceof RetentionConfigProblem) throw new ConfigError(err.variable, err.message);
    throw err;
  }
}

/** WEBHOOK_SECRET_KEYS, checked (src/webhooks/secret-box.ts). */
function parseSecretKeys(raw: string | undefined): SecretKeyRing | undefined {
  try {
    return parseSecretKeyRing(raw);
  } catch (err) {
    if (err instanceof SecretKeyRingError)
      throw new ConfigError('WEBHOOK_SECRET_KEYS', err.message);
    throw err;
  }
}

/** WEBHOOK_ALLOWED_CIDRS, checked (src/webhooks/ssrf-guard.ts). */
function parseAllowedCidrs(raw: string | undefined): string[] {
  try {
    return parseCidrList(raw);
  } catch (err) {
    if (err instanceof CidrListError) throw new ConfigError('WEBHOOK_ALLOWED_CIDRS', err.message);
    throw err;
  }
}
