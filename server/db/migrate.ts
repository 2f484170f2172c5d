import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { checkPooledSettings, sessionUrl, type PoolerConfig } from './pooler.ts';
import { createSql, type ISql } from './sql.ts';

export type StorageTier = 'timescaledb' | 'timescaledb-apache' | 'postgresql';

export interface MigrationReport {
  tier: StorageTier;
  timescaledbVersion: string | null;
  applied: AppliedMigration[];
  ranNow: string[];
}

const MIGRATIONS_DIR = new URL('../../sql/', import.meta.url);
// Any constant works; it only has to be the same in every process of this service.
const MIGRATION_LOCK_KEY = 7_311_020_001;
// A file whose first line is this marker runs outside a transaction, for DDL
// that PostgreSQL or TimescaleDB refuse inside one.
const NO_TRANSACTION = '-- mds:no-transaction';

interface TierRow {
  tier: StorageTier;
  timescaledb_version: string | null;
}

interface MigrationFile {
  version: number;
  name: string;
  text: string;
  checksum: string;
}

/**
 * Checksums a migration file had when it was first applied that stand for the
 * same statements as today's file: only its comments changed afterwards. A
 * database migrated with the earlier text is accepted; any other difference
 * is still refused.
 */
const EARLIER_CHECKSUMS: Record<number, string[]> = {
  // 003: the measured foreign-key cost in the header comment was corrected (c8cf8ba).
  3: ['a5370e530de989f565472baa70d2c96a37b709570f83f524d4aa4e3b9bbf309b'],
};

/**
 * Steps a migration's data needs that its SQL cannot take, by migration
 * version (server/runtime/migrations.ts names them): each runs after its file, in
 * its transaction, so the migration is recorded only with its data.
 */
export type DataSteps = Record<number, (q: ISql, tier: StorageTier) => Promise<void>>;

async function readMigrationFiles(): Promise<MigrationFile[]> {
  const names = (await readdir(MIGRATIONS_DIR)).filter((n) => /^\d{3}_[a-z0-9_]+\.sql$/.test(n)).sort();
  return Promise.all(
    names.map(async (name) => {
      const text = await readFile(new URL(name, MIGRATIONS_DIR), 'utf8');
      return {
        version: Number(name.slice(0, 3)),
        name,
        text,
        checksum: createHash('sha256').update(text).digest('hex'),
      };
    }),
  );
}

/**
 * Decides the storage tier once, on an empty schema: full TimescaleDB (the
 * `timescale` licence: continuous aggregates, compression), the Apache-only
 * edition (hypertables and time_bucket), or plain PostgreSQL.
 */
async function detectTier(sql: ISql): Promise<{ tier: StorageTier; version: string | null }> {
  const [probe] = await sql<{ available: boolean; preload: string }[]>`
    select
      exists (select 1 from pg_available_extensions where name = 'timescaledb') as available,
      current_setting('shared_preload_libraries') as preload
  `;
  const preloaded = probe.preload
    .split(',')
    .map((s) => s.trim())
    .includes('timescaledb');
  if (!probe.available || !preloaded) return { tier: 'postgresql', version: null };
  await sql`create extension if not exists timescaledb`;
  const [ext] = await sql<{ version: string; license: string | null }[]>`
    select
      extversion as version,
      current_setting('timescaledb.license', true) as license
    from pg_extension
    where extname = 'timescaledb'
  `;
  return {
    tier: ext.license === 'timescale' ? 'timescaledb' : 'timescaledb-apache',
    version: ext.version,
  };
}

/** Where migrate() reports: what it did at `info`, what the operator should change at `warn`. */
export type MigrationLog = (msg: string, level?: 'info' | 'warn') => void;

/**
 * How far migrate() goes: every file of sql/ (the service), or the files up
 * to and including version `through`, for a test that builds a database as
 * an installation of that version left it and then migrates the rest.
 */
export interface MigrationTarget {
  through?: number;
}

/**
 * Runs the forward-only migrations in sql/ once each, on a connection of its
 * own (the advisory lock and the transactions below are per session; a
 * one-connection client keeps them on one session without postgres.js's
 * reserve()). The lock makes concurrent starts safe: the second process
 * waits, then finds nothing to do. Statements have no timeout here: a
 * migration over a large table may take minutes.
 *
 * Given the service's `pooler` variables (its start), the migrations run on
 * the session URL (db/pooler.ts: DATABASE_DIRECT_URL when set, required
 * behind a transaction-mode pooler), and then the settings of the pooled
 * sessions on `url` are checked: a refusal is thrown, a warning logged.
 */
export async function migrate(
  url: string,
  dataSteps: DataSteps,
  log: MigrationLog = () => {},
  pooler?: PoolerConfig,
  target: MigrationTarget = {},
): Promise<MigrationReport> {
  const report = await migrateOn(pooler ? sessionUrl(url, pooler) : url, dataSteps, log, target);
  if (pooler) for (const warning of await checkPooledSettings(url, pooler)) log(warning, 'warn');
  return report;
}

async function migrateOn(url: string, dataSteps: DataSteps, log: MigrationLog, { through = Infinity }: MigrationTarget): Promise<MigrationReport> {
  const files = (await readMigrationFiles()).filter((file) => file.version <= through);
  const conn = createSql(url, { max: 1, name: 'migrate', statementTimeoutMs: 0 });
  try {
    await conn`select pg_advisory_lock(${MIGRATION_LOCK_KEY})`;
    await conn`
      create table if not exists schema_migrations (
        version integer primary key,
        name text not null,
        checksum text not null,
        applied_at timestamptz not null default now()
      )
    `;
    await conn`
      create table if not exists storage_tier (
        singleton boolean primary key default true check (singleton),
        tier text not null,
        timescaledb_version text,
        detected_at timestamptz not null default now()
      )
    `;
    let [tierRow] = await conn<TierRow[]>`select tier, timescaledb_version from storage_tier`;
    if (!tierRow) {
      const detected = await detectTier(conn);
      [tierRow] = await conn<TierRow[]>`
        insert into storage_tier (tier, timescaledb_version)
        values (${detected.tier}, ${detected.version})
        returning tier, timescaledb_version
      `;
      log(`storage tier detected: ${detected.tier}${detected.version ? ` (timescaledb ${detected.version})` : ''}`);
    }

    const applied = new Map<number, string>();
    for (const row of await conn<{ version: number; checksum: string }[]>`select version, checksum from schema_migrations`) {
      applied.set(row.version, row.checksum);
    }
    const ranNow: string[] = [];
    const paused: number[] = [];
    try {
      for (const file of files) {
        const checksum = applied.get(file.version);
        if (checksum !== undefined) {
          if (checksum !== file.checksum && !EARLIER_CHECKSUMS[file.version]?.includes(checksum)) {
            throw new Error(`migration ${file.name} was changed after it was applied; migrations are forward-only, add a new one`);
          }
          continue;
        }
        if (tierRow.tier === 'timescaledb') await quietPolicyJobs(conn, paused, log);
        const inTransaction = !file.text.startsWith(NO_TRANSACTION);
        const apply = async (q: ISql) => {
          // A migration file is many statements (DO blocks among them), which
          // only the simple query protocol runs as one message: postgres.js
          // sends unsafe() text without parameters that way. The text is this
          // repository's own sql/ file, checksummed above.
          await q.unsafe(file.text);
          await dataSteps[file.version]?.(q, tierRow.tier);
          // Paused in the transaction that added them, the scheduler never sees them due
          // (outside one, the next migration's quietPolicyJobs pauses them and waits).
          if (tierRow.tier === 'timescaledb' && inTransaction) paused.push(...(await pausePolicyJobs(q)));
          await q`
          insert into schema_migrations (version, name, checksum)
          values (${file.version}, ${file.name}, ${file.checksum})
        `;
        };
        try {
          if (inTransaction) await conn.begin((tx) => apply(tx));
          else await apply(conn);
        } catch (err) {
          throw new Error(`migration ${file.name} failed: ${(err as Error).message}`, { cause: err });
        }
        ranNow.push(file.name);
        log(`migration applied: ${file.name}`);
      }
    } finally {
      if (paused.length) await conn`select alter_job(job_id, scheduled => true) from timescaledb_information.jobs where job_id in ${conn(paused)}`;
    }
    return { tier: tierRow.tier, timescaledbVersion: tierRow.timescaledb_version, applied: await appliedMigrations(conn), ranNow };
  } finally {
    // Ending the session releases the advisory lock.
    await conn.end({ timeout: 5 });
  }
}

// TimescaleDB's policy jobs (ids from 1000) are paused while migrations run.
// 002 adds refresh policies whose first run is due at once, and 022 drops
// their aggregates: a run that finds its aggregate dropped between two
// lookups dereferences a null pointer in TimescaleDB 2.28.3
// (get_open_dimension_for_hypertable, tsl/src/bgw_policy/policy_utils.c:24,
// from policy_refresh_cagg_execute), and PostgreSQL then ends every session
// of the cluster to recover: a CI pass saw it as 503s on every database of
// the server. So the jobs a migration adds are paused in its own transaction,
// where the scheduler never sees them due, and before each migration the
// jobs still scheduled (an installation's own, or those a migration outside
// a transaction added) are paused and their runs in flight awaited: waiting
// alone let through runs launched as 002 committed. The jobs this run paused
// are scheduled again once it ends; one dropped with its aggregate is gone.
const POLICY_RUN_WAIT_MS = 60_000;
// A policy run is a background worker whose type names its job: "Refresh Continuous Aggregate Policy [1000]".
const POLICY_RUN_TYPE = String.raw`\[[0-9]+\]$`;

/** Pauses the policy jobs that are scheduled, and gives their ids. */
async function pausePolicyJobs(q: ISql): Promise<number[]> {
  const rows = await q<{ job_id: number }[]>`
    select job_id, alter_job(job_id, scheduled => false) from timescaledb_information.jobs where job_id >= 1000 and scheduled
  `;
  return rows.map((r) => r.job_id);
}

/** Pauses the policy jobs, then waits for their runs in flight to end. */
async function quietPolicyJobs(conn: ISql, paused: number[], log: MigrationLog): Promise<void> {
  const rows = await pausePolicyJobs(conn);
  paused.push(...rows);
  // A run the scheduler launched as jobs were being paused may not be listed
  // yet: after pausing, the runs must be seen clear twice, 100 ms apart.
  const looksNeeded = rows.length ? 2 : 1;
  const deadline = Date.now() + POLICY_RUN_WAIT_MS;
  for (let looksClear = 0; ;) {
    const [{ runs }] = await conn<{ runs: number }[]>`
      select count(*)::int as runs from pg_stat_activity where datname = current_database() and backend_type ~ ${POLICY_RUN_TYPE}
    `;
    looksClear = runs === 0 ? looksClear + 1 : 0;
    if (looksClear === looksNeeded) return;
    if (Date.now() > deadline) {
      log(`TimescaleDB policy runs still in flight after ${POLICY_RUN_WAIT_MS / 1000} s; migrating anyway`, 'warn');
      return;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

export interface AppliedMigration {
  version: number;
  name: string;
  appliedAt: string;
}

/** The migrations applied to this database, in order. */
export async function appliedMigrations(sql: ISql): Promise<AppliedMigration[]> {
  const rows = await sql<{ version: number; name: string; applied_at: Date }[]>`
    select version, name, applied_at
    from schema_migrations
    order by version
  `;
  return rows.map((r) => ({ version: r.version, name: r.name, appliedAt: r.applied_at.toISOString() }));
}

export async function readStorageTier(sql: ISql): Promise<{ tier: StorageTier; timescaledbVersion: string | null; detectedAt: string }> {
  const [row] = await sql<(TierRow & { detected_at: Date })[]>`select tier, timescaledb_version, detected_at from storage_tier`;
  return { tier: row.tier, timescaledbVersion: row.timescaledb_version, detectedAt: row.detected_at.toISOString() };
}

export async function readServerVersion(sql: ISql): Promise<string> {
  const [row] = await sql<{ server_version: string }[]>`select current_setting('server_version') as server_version`;
  return row.server_version;
}
