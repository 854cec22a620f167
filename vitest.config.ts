import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The Temporal native bridge does not survive worker threads; each file gets its own process.
    pool: 'forks',
    globalSetup: ['test/support/global-setup.ts'],
    // Generous bounds: a loaded 2-core runner must not fail a correct build.
    testTimeout: 120_000,
    hookTimeout: 180_000,
    teardownTimeout: 30_000,
  },
});
