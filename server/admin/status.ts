import type { Sql } from '../db/sql.ts';
import { readStorageTier } from '../db/migrate.ts';

export interface StatusReport {
  storageTier: string;
  timescaledbVersion: string | null;
  tierDetectedAt: string;
  migrations: { version: number; name: string; appliedAt: string }[];
  database: { serverVersion: string };
  workerPool: { threads: number; queueDepth: number };
  uptimeSeconds: number;
  version: string;
}

export async function readStatus(sql: Sql, pool: { threads: number; queueDepth: number }, version: string): Promise<StatusReport> {
  const tier = await readStorageTier(sql);
  const migrations = await sql`
    select version, name, applied_at
    from schema_migrations
    order by version
  `;
  const [server] = await sql`select current_setting('server_version') as v`;
  return {
    storageTier: tier.tier,
    timescaledbVersion: tier.timescaledbVersion,
    tierDetectedAt: tier.detectedAt,
    migrations: migrations.map((m) => ({ version: m.version as number, name: m.name as string, appliedAt: (m.applied_at as Date).toISOString() })),
    database: { serverVersion: server.v as string },
    workerPool: { threads: pool.threads, queueDepth: pool.queueDepth },
    uptimeSeconds: Math.round(process.uptime()),
    version,
  };
}
