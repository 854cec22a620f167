import { configDefaults, defineConfig } from 'vitest/config';
import { FAST_TESTS } from './test/fast-tier.js';

/** What both tiers share. */
const common = {
  // The Temporal native bridge does not survive worker threads; each file gets its own process.
  pool: 'forks',
  // Generous bounds: a loaded 2-core runner must not fail a correct build.
  testTimeout: 120_000,
  hookTimeout: 180_000,
  teardownTimeout: 30_000,
} as const;

// Two projects, one run: `vitest run` (npm test) runs both, each file once; `vitest run
// --project fast` (npm run test:fast) the fast tier alone, without the full tier's global setup
// (docs/testing.md, "The fast tier").
export default defineConfig({
  test: {
    projects: [
      { test: { ...common, name: 'fast', include: FAST_TESTS } },
      {
        test: {
          ...common,
          name: 'full',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...FAST_TESTS],
          // One dev server and one workflow bundle for the whole run (test/support/global-setup.ts).
          globalSetup: ['test/support/global-setup.ts'],
        },
      },
    ],
  },
});
