import type { Sql } from '../db/sql.ts';
import { appliedMigrations, readServerVersion, readStorageTier, type AppliedMigration } from '../db/migrate.ts';

export interface StatusReport {
  storageTier: string;
  timescaledbVersion: string | null;
  tierDetectedAt: string;
  migrations: AppliedMigration[];
  database: { serverVersion: string };
  workerPool: { threads: number; queueDepth: number };
  uptimeSeconds: number;
  version: string;
}

export async function readStatus(sql: Sql, pool: { threads: number; queueDepth: number }, version: string): Promise<StatusReport> {
  const tier = await readStorageTier(sql);
  const migrations = await appliedMigrations(sql);
  const serverVersion = await readServerVersion(sql);
  return {
    storageTier: tier.tier,
    timescaledbVersion: tier.timescaledbVersion,
    tierDetectedAt: tier.detectedAt,
    migrations,
    database: { serverVersion },
    workerPool: { threads: pool.threads, queueDepth: pool.queueDepth },
    uptimeSeconds: Math.round(process.uptime()),
    version,
  };
}
