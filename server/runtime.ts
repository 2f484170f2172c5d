import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import path from 'node:path';
import type { Config } from './config.ts';
import { buildAdminApp, buildPublicApp, type AppDeps } from './app.ts';
import { openDatabase } from './db/embedded.ts';
import { migrate, type MigrationReport } from './db/migrate.ts';
import { loadDemoDataIfEmpty } from './demo/load.ts';
import { createSql, type Sql } from './db/sql.ts';
import { LastUsedRecorder } from './keys/service.ts';
import type { Logger } from './logger.ts';
import { WorkerPool } from '../workers/pool.ts';

export const VERSION = '0.1.0';

export interface Runtime {
  publicUrl: string;
  adminUrl: string;
  adminToken: string;
  databaseUrl: string;
  migration: MigrationReport;
  deps: AppDeps;
  /** Ordered shutdown: stop accepting, drain in-flight requests (bounded), destroy the workers, close the database. */
  stop(): Promise<void>;
}

async function resolveAdminToken(config: Config, logger: Logger): Promise<string> {
  if (config.ADMIN_TOKEN) return config.ADMIN_TOKEN;
  const file = path.resolve(config.DATA_DIR, 'admin-token');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const token = `adm_${randomBytes(32).toString('base64url')}`;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  // Printed once, to the terminal only (not the structured log); kept in the file above.
  process.stderr.write(`\nGenerated admin token (stored in ${file}, mode 0600):\n  ${token}\n\n`);
  logger.info({ file }, 'admin token generated');
  return token;
}

// 500 comma-separated UUIDs make an 18.5 KB query string, above Node's 16 KiB default.
const MAX_HEADER_BYTES = 64 * 1024;

// Node's default of 300 s would cut a multi-million-row ingest upload short;
// admin uploads may stream for up to an hour.
const ADMIN_REQUEST_TIMEOUT_MS = 3_600_000;

function listen(app: ReturnType<typeof buildPublicApp>, port: number, host: string, requestTimeout?: number): Promise<Server> {
  return new Promise((resolve, reject) => {
    const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES, ...(requestTimeout ? { requestTimeout } : {}) }, app);
    server.once('error', reject);
    server.listen(port, host, () => resolve(server));
  });
}

function urlOf(server: Server): string {
  const addr = server.address() as { address: string; port: number };
  return `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`;
}

export async function startRuntime(
  config: Config,
  logger: Logger,
  hooks: { afterMigrate?: (sql: Sql, report: MigrationReport) => Promise<void> } = {},
): Promise<Runtime> {
  const database = await openDatabase(config, (m) => logger.debug({ postgres: m.trim() }, 'embedded postgres'));
  const databaseUrl = database.url;
  if (database.embedded) logger.info({ dir: path.join(config.DATA_DIR, 'pg') }, 'using embedded PostgreSQL');
  const sql = createSql(databaseUrl, { max: config.DATABASE_POOL_SIZE, name: 'primary' });
  // Key resolution and request counting run on every /v1 request. Their commits
  // skip the WAL flush wait (synchronous_commit=off): a crash can lose the last
  // fraction of a second of counter increments and lastUsedAt times, never data.
  const authSql = createSql(databaseUrl, { max: config.DATABASE_POOL_SIZE, name: 'auth', synchronousCommit: 'off' });
  const readSql = config.DATABASE_READ_URL ? createSql(config.DATABASE_READ_URL, { max: config.DATABASE_POOL_SIZE, name: 'replica' }) : sql;
  const migration = await migrate(sql, (m) => logger.info(m));
  logger.info({ tier: migration.tier, timescaledb: migration.timescaledbVersion }, 'storage tier');
  await hooks.afterMigrate?.(sql, migration);
  if (config.DEMO_DATA === 'auto') {
    const started = Date.now();
    const loaded = await loadDemoDataIfEmpty(sql);
    if (loaded) logger.info({ ms: Date.now() - started, rows: Object.fromEntries(Object.entries(loaded).map(([k, v]) => [k, v.rows])) }, 'demo data set loaded');
  }

  const adminToken = await resolveAdminToken(config, logger);
  const pool = new WorkerPool({ threads: config.WORKER_THREADS, maxQueue: config.WORKER_MAX_QUEUE, taskTimeoutMs: config.WORKER_TASK_TIMEOUT_MS, niceIncrement: config.WORKER_NICE });
  const lastUsed = new LastUsedRecorder(authSql);
  const deps: AppDeps = { config, sql, authSql, readSql, logger, pool, lastUsed, adminToken, version: VERSION };

  const publicServer = await listen(buildPublicApp(deps), config.PORT, '0.0.0.0');
  const adminServer = await listen(buildAdminApp(deps), config.ADMIN_PORT, config.ADMIN_HOST, ADMIN_REQUEST_TIMEOUT_MS);

  let stopping: Promise<void> | null = null;
  const stop = () =>
    (stopping ??= (async () => {
      const closed = Promise.all(
        [publicServer, adminServer].map((s) => new Promise<void>((resolve) => s.close(() => resolve()))),
      );
      // Keep-alive connections become idle as their last response ends; close
      // them as they do rather than waiting out the keep-alive timeout.
      const sweep = setInterval(() => [publicServer, adminServer].forEach((s) => s.closeIdleConnections()), 50);
      for (const s of [publicServer, adminServer]) s.closeIdleConnections();
      const grace = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), config.SHUTDOWN_GRACE_MS).unref());
      if ((await Promise.race([closed, grace])) === 'timeout') {
        logger.warn({ graceMs: config.SHUTDOWN_GRACE_MS }, 'in-flight requests outlived the grace period; closing their connections');
        for (const s of [publicServer, adminServer]) s.closeAllConnections();
        await closed;
      }
      clearInterval(sweep);
      await pool.destroy();
      await lastUsed.flush();
      await authSql.end({ timeout: 5 });
      await sql.end({ timeout: 5 });
      if (readSql !== sql) await readSql.end({ timeout: 5 });
      await database.stop();
    })());

  return {
    publicUrl: urlOf(publicServer),
    adminUrl: urlOf(adminServer),
    adminToken,
    databaseUrl,
    migration,
    deps,
    stop,
  };
}
