import { defineConfig } from 'vitest/config';

// Two projects: unit specs need no database; integration specs share one real
// PostgreSQL/TimescaleDB server chosen once by the global setup (see
// test/global-setup.ts), each file on a database of its own cloned from one
// migrated template (test/integration/file-database.ts), so files run in parallel.
export default defineConfig({
  test: {
    // Test files at once. An integration file spends most of its time waiting
    // (on PostgreSQL, on sockets, on timeouts it tests), so on 2 cores three
    // at a time finish sooner than one.
    maxWorkers: 3,
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
          setupFiles: ['test/integration/file-database.ts'],
          testTimeout: 30_000,
          hookTimeout: 120_000,
        },
      },
    ],
  },
});
