/**
 * The fast tier (docs/testing.md, "The fast tier"): `npm run test:fast` runs these files and no
 * others, in under a minute, with no shared dev server, cluster or store. Pure functions as
 * tables, and the create workflow's branches with stub activities on Temporal's time-skipping
 * test server. `npm test` runs them too, once, in the same run as every other suite
 * (vitest.config.ts: two projects, `fast` and `full`, that never share a file).
 *
 * A file belongs here when it starts no server of the full tier (no `inject()`, no
 * test/support/stack.ts or api.ts) and takes seconds.
 */
export const FAST_TESTS = [
  'test/bench-cpu-rest.test.ts',
  'test/bench-goals.test.ts',
  'test/bench-service-env.test.ts',
  'test/bench-sizing.test.ts',
  'test/cited-paths.test.ts',
  'test/config-retention.test.ts',
  'test/config-templates.test.ts',
  'test/config-tenant-limits.test.ts',
  'test/create-rate.test.ts',
  'test/create-workflow-branches.test.ts',
  'test/credential-hint.test.ts',
  'test/doc-examples-rules.test.ts',
  'test/fairness-keys.test.ts',
  'test/fault-report.test.ts',
  'test/labels.test.ts',
  'test/layers.test.ts',
  'test/lifetime-durations.test.ts',
  'test/lifetime-workflow.test.ts',
  'test/nexus-tenants.test.ts',
  'test/oidc-config.test.ts',
  'test/operation-notifier.test.ts',
  'test/outcome-at-decision-rules.test.ts',
  'test/outcome-at-decision-trace.test.ts',
  'test/placement-rules.test.ts',
  'test/refusal-bounds.test.ts',
  'test/refusal.test.ts',
  'test/sdk-log-forwarder.test.ts',
  'test/statement-cache.test.ts',
  'test/topology-port-line.test.ts',
  'test/trace-missing.test.ts',
  'test/wait-until.test.ts',
  'test/warm-pod-draws.test.ts',
  'test/warm-pool-plan.test.ts',
  'test/watch-policy.test.ts',
  'test/webhook-delivery-workflow.test.ts',
  'test/webhook-secret-box.test.ts',
  'test/webhook-targets.test.ts',
];
