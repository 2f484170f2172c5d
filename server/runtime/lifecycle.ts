import type { Server } from 'node:http';
import type { Express } from 'express';
import { resolveAdminToken } from './admin-token.ts';
import { buildAdminApp, buildPublicApp, buildStartingApp } from '../app.ts';
import type { AppDeps } from '../wiring/deps.ts';
import type { Config } from '../config.ts';
import type { ReplicaRouter } from '../db/replica-router.ts';
import { selectSigningKey } from '../db/signing-keys.ts';
import { ListCursors } from '../core/cursor.ts';
import { survivePostgresTypesFetchFailures } from '../db/driver-defects.ts';
import { openDatabase } from '../db/embedded.ts';
import { isConnectionFailure } from '../db/health.ts';
import type { MigrationReport } from '../db/migrate.ts';
import { migrate } from './migrations.ts';
import type { Sql } from '../db/sql.ts';
import { loadDemoDataIfEmpty } from '../demo/load.ts';
import { deriveAll } from '../wiring/derivations.ts';
import { storeShippedRiskFreeRates } from '../demo/risk-free-rates.ts';
import { ADMIN_REQUEST_TIMEOUT_MS, openListener } from './listener.ts';
import type { Logger } from '../observability/logger.ts';
import { openPools, type OpenedPools } from './pools.ts';
import { ExportRunner } from '../exports/runner.ts';
import { VERSION } from '../core/version.ts';
import { errorCode } from '../core/errors.ts';

// Waits between attempts to reach the database at start: 0.5 s doubling to 5 s.
const START_RETRY_FIRST_MS = 500;
const START_RETRY_MAX_MS = 5_000;

/** After the drain, what is left closes within this budget (pools, the embedded cluster). */
const CLOSE_BUDGET_S = 0.5;

/**
 * The service's process-wide parts and their order. `start` listens at once
 * (so /healthz answers and /readyz says 503 while the rest starts), then
 * opens the database, retrying with backoff while it is unreachable, runs the
 * migrations, loads the demo set on first start, and only then serves the
 * API. `stop` works at any point, during start included: stop accepting,
 * drain in-flight requests within SHUTDOWN_GRACE_MS, then close the workers,
 * the pools and the embedded cluster within a further CLOSE_BUDGET_S.
 */
export class Runtime {
  publicUrl = '';
  adminUrl = '';
  adminToken = '';
  databaseUrl = '';
  migration: MigrationReport | null = null;
  deps: AppDeps | null = null;

  private readonly servers: Server[] = [];
  private readonly apps: Record<'public' | 'admin', Express>;
  private readonly stopped = new AbortController();
  private database: Awaited<ReturnType<typeof openDatabase>> | null = null;
  /** What openPools opened, closed by closeResources; `deps` is these and the list cursors. */
  private pools: OpenedPools['deps'] | null = null;
  private primarySql: Sql | null = null;
  private replicas: ReplicaRouter | null = null;
  private stopping: Promise<void> | null = null;
  /** This process's export runner (exports/runner.ts), while it serves the API. */
  private exportRunner: ExportRunner | null = null;

  readonly config: Config;
  readonly logger: Logger;

  constructor(config: Config, logger: Logger) {
    this.config = config;
    this.logger = logger;
    this.apps = { public: buildStartingApp('public', config, logger), admin: buildStartingApp('admin', config, logger) };
    survivePostgresTypesFetchFailures(logger);
  }

  /** The primary pool without its gate, for tests and tools; request paths use deps.db. */
  get sql(): Sql {
    if (!this.primarySql) throw new Error('the runtime has not opened its database');
    return this.primarySql;
  }

  /**
   * Starts a lone process, or one of several serving processes
   * (server/runtime/processes.ts): then `prepared` reports the listeners to the
   * primary once they are up, and resolves once the primary has migrated the
   * database and loaded its data, with the migration's report; meanwhile the
   * listeners answer as they do while a lone process starts.
   */
  async start(options: { prepared?: () => Promise<MigrationReport> } = {}): Promise<void> {
    const { config, logger } = this;
    try {
      this.adminToken = await resolveAdminToken(config, logger);
      this.publicUrl = await this.listen('public', config.PORT, config.HOST);
      this.adminUrl = await this.listen('admin', config.ADMIN_PORT, config.ADMIN_HOST, ADMIN_REQUEST_TIMEOUT_MS);
      logger.info({ public: this.publicUrl, admin: this.adminUrl }, 'listening; starting');
      await this.openDatabaseServer();
      if (options.prepared) {
        this.migration = await this.untilStopped(options.prepared());
        await this.openPools();
      } else {
        await this.migrateAndLoad();
      }
      this.stopped.signal.throwIfAborted();
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- openPools, in either branch above, set the deps
      this.apps.public = buildPublicApp(this.deps!);
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- openPools, in either branch above, set the deps
      this.apps.admin = buildAdminApp(this.deps!);
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- openPools, in either branch above, set the deps
      this.exportRunner = new ExportRunner(this.deps!);
      this.exportRunner.start();
    } catch (err) {
      await this.stop();
      // What this start opened after a stop had already run.
      await this.closeResources();
      throw err;
    }
  }

  /**
   * The primary of several processes: opens the database and calls `opened`
   * with its URL (the serving processes start then, and listen while this
   * migrates), migrates and loads the data once, then closes its own pools
   * and threads. An embedded cluster stays up for the serving processes until
   * `stop`.
   */
  async prepare(opened: (databaseUrl: string) => void): Promise<void> {
    try {
      this.adminToken = await resolveAdminToken(this.config, this.logger);
      await this.openDatabaseServer();
      opened(this.databaseUrl);
      await this.migrateAndLoad();
      this.stopped.signal.throwIfAborted();
      const database = this.database;
      this.database = null;
      await this.closeResources();
      this.database = database;
    } catch (err) {
      await this.stop();
      await this.closeResources();
      throw err;
    }
  }

  /** DATABASE_URL, or the embedded cluster under DATA_DIR, started or created. */
  private async openDatabaseServer(): Promise<void> {
    const { config, logger } = this;
    this.database = await openDatabase(config, {
      create: true,
      onLog: (m) => logger.debug({ postgres: m.trim() }, 'embedded postgres'),
      onNotice: (notice) => logger.info(notice),
    });
    this.databaseUrl = this.database.url;
    if (this.database.embedded) logger.info({ dir: this.database.dataDir }, 'using embedded PostgreSQL');
  }

  /** Migrations, the pools, the shipped risk-free rates and, on first start, the demo set. */
  private async migrateAndLoad(): Promise<void> {
    const { config, logger } = this;
    this.migration = await this.untilReachable('migrate', () => migrate(this.databaseUrl, (m, level = 'info') => logger[level](m), config));
    this.stopped.signal.throwIfAborted();
    logger.info({ tier: this.migration.tier, timescaledb: this.migration.timescaledbVersion }, 'storage tier');

    const deps = await this.openPools();
    // The real TB3MS history that point-in-time model inputs read is shipped with the service, demo data or not.
    const rates = await deps.db.run((sql) => storeShippedRiskFreeRates(sql));
    if (rates.inserted || rates.updated) logger.info(rates, 'risk-free rate history (TB3MS) stored');
    if (config.DEMO_DATA === 'auto') {
      const started = Date.now();
      const loaded = await loadDemoDataIfEmpty({ db: deps.db, deriveAll: () => deriveAll(deps) });
      if (loaded)
        logger.info(
          {
            ms: Date.now() - started,
            rows: Object.fromEntries(Object.entries(loaded.stored).map(([k, v]) => [k, v.rows])),
            derived: Object.fromEntries(Object.entries(loaded.derived).map(([k, v]) => [k, v?.rows])),
          },
          'demo data set loaded',
        );
    }
  }

  /** `work`'s outcome, or the stop's reason as soon as the runtime stops. */
  private untilStopped<T>(work: Promise<T>): Promise<T> {
    const { signal } = this.stopped;
    return new Promise((resolve, reject) => {
      if (signal.aborted) reject(signal.reason);
      signal.addEventListener('abort', () => reject(signal.reason), { once: true });
      work.then(resolve, reject);
    });
  }

  stop(): Promise<void> {
    return (this.stopping ??= this.shutDown());
  }

  /** The Express app serving a listener at this moment (the starting app until the service is ready). */
  app(listener: 'public' | 'admin'): Express {
    return this.apps[listener];
  }

  private async shutDown(): Promise<void> {
    this.stopped.abort(new Error('the service is stopping'));
    const closed = Promise.all(this.servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
    // Keep-alive connections become idle as their last response ends; close
    // them as they do rather than waiting out the keep-alive timeout.
    const sweep = setInterval(() => this.servers.forEach((s) => s.closeIdleConnections()), 50);
    for (const s of this.servers) s.closeIdleConnections();
    const grace = new Promise<'timeout'>((r) => setTimeout(() => r('timeout'), this.config.SHUTDOWN_GRACE_MS).unref());
    if ((await Promise.race([closed, grace])) === 'timeout') {
      this.logger.warn({ graceMs: this.config.SHUTDOWN_GRACE_MS }, 'in-flight requests outlived the grace period; closing their connections');
      for (const s of this.servers) s.closeAllConnections();
      await closed;
    }
    clearInterval(sweep);
    await this.closeResources();
  }

  /** Workers, pools and the embedded cluster, whichever are open; each is closed once. */
  private async closeResources(): Promise<void> {
    // Its running jobs stop at their next instrument and are given back, before the pools close under them.
    await this.exportRunner?.stop();
    this.exportRunner = null;
    const { pools: deps, database } = this;
    this.pools = null;
    this.deps = null;
    this.database = null;
    if (deps) {
      await deps.pool.destroy();
      await deps.passwords.destroy();
      await deps.lastUsed.flush();
      deps.db.health.stop();
      await Promise.all([deps.authDb.end(CLOSE_BUDGET_S), deps.db.end(CLOSE_BUDGET_S), this.replicas?.stop(CLOSE_BUDGET_S)]);
    }
    await database?.stop();
  }

  /** Listens (listener.ts) with this runtime's app for `listener`, whichever it is at the moment; `stop` closes it. */
  private async listen(listener: 'public' | 'admin', port: number, host: string, requestTimeout?: number): Promise<string> {
    const { server, url } = await openListener(listener, port, host, (req, res) => this.apps[listener](req, res), this.config, this.logger, requestTimeout);
    this.servers.push(server);
    return url;
  }

  /** Runs `step`, retrying with backoff (one log line per attempt) while the database is unreachable, until it succeeds or the runtime stops. */
  private async untilReachable<T>(name: string, step: () => Promise<T>): Promise<T> {
    for (let attempt = 1, waitMs = START_RETRY_FIRST_MS; ; attempt++, waitMs = Math.min(waitMs * 2, START_RETRY_MAX_MS)) {
      this.stopped.signal.throwIfAborted();
      try {
        return await step();
      } catch (err) {
        const failure = isConnectionFailure(err) ? err : err instanceof Error && isConnectionFailure(err.cause) ? err.cause : null;
        if (!failure) throw err;
        const reason = failure instanceof Error ? failure.message : undefined;
        this.logger.warn({ step: name, attempt, retryInMs: waitMs, code: errorCode(failure), reason }, 'database unreachable at start; retrying');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          this.stopped.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        });
      }
    }
  }

  /** The pools, then the deps: the pools and the list cursors, whose signing key is read once from the primary. */
  private async openPools(): Promise<AppDeps> {
    const { deps, primarySql, replicas } = openPools(this.config, this.logger, this.databaseUrl, { adminToken: this.adminToken, version: VERSION });
    this.pools = deps;
    this.primarySql = primarySql;
    this.replicas = replicas;
    // On the pool without its gate: the gate refuses every unit at once after
    // one connection failure, and this read is retried while the primary is away.
    const secret = await this.untilReachable('read the cursor signing key', () => selectSigningKey(primarySql, 'cursor_signing_key'));
    this.stopped.signal.throwIfAborted();
    return (this.deps = { ...deps, cursors: new ListCursors(secret) });
  }
}

/** Creates and starts a runtime; resolves once it serves the API. */
export async function startRuntime(config: Config, logger: Logger): Promise<Runtime> {
  const runtime = new Runtime(config, logger);
  await runtime.start();
  return runtime;
}
