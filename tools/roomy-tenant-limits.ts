/**
 * Tenant limits for runs about something else than tenant limits: the bench, the chaos runs and
 * the test suites (their harness). The built-in defaults are a shared installation's (20
 * sandboxes, 5 creates a second with a burst of 10: src/config/tenant-limits.ts), and these runs
 * hold thousands of one tenant's creates, or a hundred warm-pool claims at once. Set explicitly
 * (TENANT_LIMITS' `default`), so the built-in defaults stay what a fresh install runs with.
 */
export const ROOMY_TENANT_LIMITS = {
  sandboxes: 1_000_000,
  cpu: 1_000_000,
  memory_mib: 1024 * 1024 * 1024,
  disk_mib: 1024 * 1024 * 1024,
  creates_per_second: 1_000_000,
  create_burst: 1_000_000,
  // The per-process cap of long-polls (src/api/long-poll.ts) comes first.
  waits: 1_000,
} as const;

/** TENANT_LIMITS giving every tenant {@link ROOMY_TENANT_LIMITS}. */
export const ROOMY_TENANT_LIMITS_ENV = JSON.stringify({ default: ROOMY_TENANT_LIMITS });
