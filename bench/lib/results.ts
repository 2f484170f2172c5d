// The shape of a scenario's result and the head every result starts with.
import type { DbServer } from './database.ts';
import type { ServiceStatus } from './http.ts';
import type { Service } from './service.ts';

export interface ScenarioContext {
  db: DbServer;
  /** Prefix for this run's databases: mds_bench_<ts>. */
  runId: string;
}

export interface ScenarioResult {
  scenario: string;
  tier: string;
  database: { kind: DbServer['kind']; serverVersion: string; timescaledbVersion: string | null };
  service: { process: 'child'; nodeArgs: string[] };
  config: Record<string, unknown>;
  [section: string]: unknown;
  meetsTarget: Record<string, boolean>;
  serverIssues: string[];
  notes: string[];
}

/** The head of every scenario's result: the storage tier, the database, how the service ran. */
export function resultHeader(ctx: ScenarioContext, status: ServiceStatus, service: Pick<Service, 'nodeArgs'>) {
  return {
    tier: status.storageTier,
    database: { kind: ctx.db.kind, serverVersion: status.database.serverVersion, timescaledbVersion: status.timescaledbVersion },
    service: { process: 'child' as const, nodeArgs: service.nodeArgs },
  };
}
