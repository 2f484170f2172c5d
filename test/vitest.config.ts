import { defineConfig } from 'vitest/config';

// Two projects: unit specs need no database; integration specs share one real
// PostgreSQL/TimescaleDB chosen once by the global setup (see test/global-setup.ts).
export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          // A deadline, not a timing check: the property tests (thousands of
          // generated cases) take 4-6 s on a 2-core machine under a load
          // average of 12, past vitest's 5 s default.
          testTimeout: 60_000,
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/integration/**/*.test.ts'],
          globalSetup: ['test/global-setup.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
          fileParallelism: false,
        },
      },
    ],
  },
});
