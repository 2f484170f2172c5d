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
          // The heaviest specs (435 Spearman pairs against a reference, 5,000 generated strings) took 4.8-6.5 s
          // on two cores shared at a load average of 12-16, past vitest's 5 s default.
          testTimeout: 30_000,
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
