import { migrate as migrateWith, type DataSteps, type MigrationLog, type MigrationReport, type MigrationTarget } from '../db/migrate.ts';
import type { PoolerConfig } from '../db/pooler.ts';
import { fillRollupDays, fillRollupText } from '../prices/repository.ts';

// The service's migrations: the files of sql/ (db/migrate.ts) and the steps
// their data needs that SQL cannot take, written by the code that writes the
// same data at ingest.

const DATA_STEPS: DataSteps = {
  // 026: the response text of the rollup bars already stored (full TimescaleDB's continuous aggregates keep none).
  26: async (q, tier) => {
    if (tier !== 'timescaledb') await fillRollupText(q);
  },
  // 028: the rollup days of the bars already stored.
  28: async (q, tier) => {
    if (tier !== 'timescaledb') await fillRollupDays(q);
  },
};

/** Applies the pending migrations (see db/migrate.ts, migrate), all of them unless `target` stops at a version. */
export function migrate(url: string, log?: MigrationLog, pooler?: PoolerConfig, target?: MigrationTarget): Promise<MigrationReport> {
  return migrateWith(url, DATA_STEPS, log, pooler, target);
}
