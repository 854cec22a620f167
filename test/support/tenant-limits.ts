/**
 * TENANT_LIMITS of the suites that are not about tenant limits (tools/roomy-tenant-limits.ts):
 * a suite makes more than a shared installation's 20 sandboxes or 10 creates at once of one
 * tenant. The suites about limits (test/tenant-limits*.test.ts, test/cli.test.ts's quota) set
 * their own, and the built-in defaults stay what a fresh install runs with.
 */
export { ROOMY_TENANT_LIMITS_ENV as ROOMY_TENANT_LIMITS } from '../../tools/roomy-tenant-limits.js';
