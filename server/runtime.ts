import { randomBytes, randomUUID } from 'node:crypto';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readFile, writeFile } from 'node:fs/promises';
import { createServer, STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import path from 'node:path';
import type { Express } from 'express';
import { publicBaseUrl, type Config } from './config.ts';
import { buildAdminApp, buildPublicApp, buildStartingApp } from './app.ts';
import type { AppDeps } from './area.ts';
import { Database, type DatabaseOptions } from './db/database.ts';
import { ReplicaRouter } from './db/replicas.ts';
import { survivePostgresTypesFetchFailures } from './db/driver-defects.ts';
import { openDatabase } from './db/embedded.ts';
import { DatabaseHealth, isConnectionFailure } from './db/health.ts';
import { migrate, type MigrationReport } from './db/migrate.ts';
import { createSql, type Sql } from './db/sql.ts';
import { loadDemoDataIfEmpty } from './demo/load.ts';
import { storeShippedRiskFreeRates } from './demo/risk-free-rates.ts';
import { LastUsedRecorder } from './keys/service.ts';
import { macroServiceOf } from './macro/service.ts';
import type { Logger } from './logger.ts';
import { connectionsDropped, httpRequests } from './metrics.ts';
import { WorkerPool } from './worker-pool.ts';
import { PasswordHasher } from './dashboard/password.ts';
import { AppError } from './core/errors.ts';
import { errorBody } from './http/errors.ts';

export const VERSION = '0.1.0';

async function resolveAdminToken(config: Config, logger: Logger): Promise<string> {
  if (config.ADMIN_TOKEN) return config.ADMIN_TOKEN;
  const file = path.resolve(config.DATA_DIR, 'admin-token');
  if (existsSync(file)) return (await readFile(file, 'utf8')).trim();
  const token = `adm_${randomBytes(32).toString('base64url')}`;
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, `${token}\n`, { mode: 0o600 });
  await chmod(file, 0o600);
  // Only where it is: a process's stderr is a log too once a supervisor
  // (systemd, docker compose logs) keeps it, and no secret goes to a log.
  logger.info({ file }, 'admin token generated; read it from the file (mode 0600)');
  return token;
}

// 500 comma-separated UUIDs make an 18.5 KB query string, above Node's 16 KiB default.
const MAX_HEADER_BYTES = 64 * 1024;

// Node's default of 300 s would cut a multi-million-row ingest upload short;
// admin uploads may stream for up to an hour.
const ADMIN_REQUEST_TIMEOUT_MS = 3_600_000;

// How often Node looks for requests past HEADERS_TIMEOUT_MS or their request
// timeout. Its default of 30 s let a client trickling its headers hold a
// socket for up to 90 s under a 60 s timeout (71 s measured); each pass walks
// the open connections, at most MAX_CONNECTIONS of them.
const CONNECTIONS_CHECK_INTERVAL_MS = 1_000;

// An idle kept-alive connection holds one of MAX_CONNECTIONS; a client's next
// request within 5 s (Node's default) reuses it.
const KEEP_ALIVE_TIMEOUT_MS = 5_000;

// After an error answer to a request Node could not parse, the connection is
// destroyed this long after the answer was sent, whether or not the client
// closed its side: the listener keeps half-open connections (allowHalfOpen),
// and a slow client refused by HEADERS_TIMEOUT_MS may never close.
const CLIENT_ERROR_LINGER_MS = 1_000;

// A listener at MAX_CONNECTIONS logs one warn line at most this often, with
// the count of connections it closed unanswered since it started.
const DROP_LOG_INTERVAL_MS = 10_000;

// Waits between attempts to reach the database at start: 0.5 s doubling to 5 s.
const START_RETRY_FIRST_MS = 500;
const START_RETRY_MAX_MS = 5_000;

// Connections of the auth pool. Requests that arrive while its statements are
// in flight are admitted together in the next one (keys/admission.ts), so
// fewer connections make larger batches. With 50 clients on 2 cores, one
// request's service CPU was 0.15 to 0.18 ms with 1 connection (about 20
// requests a statement), 0.17 to 0.19 with 2 (12), 0.18 to 0.19 with 4 (7)
// and 0.20 to 0.22 with 10 (4). Two keep a second statement ready while one
// waits on a row lock or the network.
const AUTH_CONNECTIONS = 2;

/** After the drain, what is left closes within this budget (pools, the embedded cluster). */
const CLOSE_BUDGET_S = 0.5;

/** A listener that cannot bind, as one line naming the port and the variable that sets it. */
export class ListenError extends Error {}

function listenRefusal(listener: 'public' | 'admin', host: string, port: number, err: NodeJS.ErrnoException): ListenError {
  const variable = listener === 'public' ? 'PORT' : 'ADMIN_PORT';
  if (err.code === 'EADDRINUSE') {
    return new ListenError(`port ${port} (${variable}) is already in use on ${host}: stop the process using it or set ${variable} to a free port`, {
      cause: err,
    });
  }
  const variables = listener === 'public' ? variable : `ADMIN_HOST, ${variable}`;
  return new ListenError(`cannot listen on ${host}:${port} (${variables}): ${err.message}`, { cause: err });
}

const CLIENT_ERRORS: Record<string, { status: number; error: () => AppError }> = {
  HPE_HEADER_OVERFLOW: { status: 431, error: () => new AppError('request_header_too_large', `the request line and headers exceed ${MAX_HEADER_BYTES} bytes`) },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, error: () => new AppError('request_timeout', 'the request was not received in time') },
};

/**
 * Node answers a request it cannot parse (bad syntax, headers over the limit,
 * a request that never finishes arriving) itself, with a bare status line.
 * This answers with the error envelope and an X-Request-Id instead, and
 * counts and logs it like any other request.
 */
function answerClientError(listener: 'public' | 'admin', baseUrl: string, logger: Logger) {
  return (err: NodeJS.ErrnoException, socket: Duplex & { bytesWritten?: number }) => {
    // As Node does: answer only on a connection nothing was written to yet.
    // Otherwise the bytes are what follows a response already sent (the unread
    // rest of a request on a connection the client asked to close, say).
    if (err.code === 'ECONNRESET' || !socket.writable || socket.bytesWritten) {
      socket.destroy();
      return;
    }
    const known = CLIENT_ERRORS[err.code ?? ''];
    const status = known?.status ?? 400;
    const appError = known?.error() ?? new AppError('invalid_request', 'the request is not valid HTTP', { request: [err.code ?? 'unparseable'] });
    const requestId = randomUUID();
    const body = JSON.stringify(errorBody(appError, baseUrl));
    socket.end(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n` +
        `X-Request-Id: ${requestId}\r\nConnection: close\r\n\r\n${body}`,
    );
    const linger = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
    socket.once('close', () => clearTimeout(linger));
    httpRequests.inc({ listener, method: 'unparsed', route: 'unparsed', status: String(status) });
    logger.info({ requestId, listener, route: 'unparsed', status, errorCode: appError.code, reason: err.code }, 'request');
  };
}

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
  private primarySql: Sql | null = null;
  private replicas: ReplicaRouter | null = null;
  private stopping: Promise<void> | null = null;

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
   * (server/processes.ts): then `prepared` reports the listeners to the
   * primary once they are up, and resolves once the primary has migrated the
   * database and loaded its data, with the migration's report; meanwhile the
   * listeners answer as they do while a lone process starts.
   */
  async start(options: { prepared?: () => Promise<MigrationReport> } = {}): Promise<void> {
    const { config, logger } = this;
    try {
      this.adminToken = await resolveAdminToken(config, logger);
      this.publicUrl = await this.listen('public', config.PORT, '0.0.0.0');
      this.adminUrl = await this.listen('admin', config.ADMIN_PORT, config.ADMIN_HOST, ADMIN_REQUEST_TIMEOUT_MS);
      logger.info({ public: this.publicUrl, admin: this.adminUrl }, 'listening; starting');
      await this.openDatabaseServer();
      if (options.prepared) {
        this.migration = await this.untilStopped(options.prepared());
        this.deps = this.openPools();
      } else {
        await this.migrateAndLoad();
      }
      this.stopped.signal.throwIfAborted();
      this.apps.public = buildPublicApp(this.deps!);
      this.apps.admin = buildAdminApp(this.deps!);
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

    const deps = (this.deps = this.openPools());
    // The real TB3MS history that point-in-time model inputs read is shipped with the service, demo data or not.
    const rates = await deps.db.run((sql) => storeShippedRiskFreeRates(sql));
    if (rates.inserted || rates.updated) logger.info(rates, 'risk-free rate history (TB3MS) stored');
    if (config.DEMO_DATA === 'auto') {
      const started = Date.now();
      const loaded = await loadDemoDataIfEmpty(deps);
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
    const { deps, database } = this;
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

  /**
   * Listens with the slow-client and connection limits: a request's line and
   * headers must arrive within HEADERS_TIMEOUT_MS, the whole request within
   * `requestTimeout` (REQUEST_TIMEOUT_MS by default), else 408 and the
   * connection is closed; beyond MAX_CONNECTIONS open connections, Node closes
   * each new one as soon as it is accepted, so the client sees its connection
   * closed (a reset or an end of stream) before any answer, at once.
   */
  private listen(listener: 'public' | 'admin', port: number, host: string, requestTimeout?: number): Promise<string> {
    const { config, logger } = this;
    return new Promise((resolve, reject) => {
      const server = createServer(
        {
          maxHeaderSize: MAX_HEADER_BYTES,
          headersTimeout: config.HEADERS_TIMEOUT_MS,
          // Node refuses a request timeout shorter than the headers timeout.
          requestTimeout: Math.max(requestTimeout ?? config.REQUEST_TIMEOUT_MS, config.HEADERS_TIMEOUT_MS),
          connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS,
        },
        (req, res) => this.apps[listener](req, res),
      );
      server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
      server.maxConnections = config.MAX_CONNECTIONS;
      let dropped = 0;
      let loggedAt = -Infinity;
      server.on('drop', () => {
        dropped++;
        connectionsDropped.inc({ listener });
        if (Date.now() - loggedAt < DROP_LOG_INTERVAL_MS) return;
        loggedAt = Date.now();
        logger.warn({ listener, maxConnections: config.MAX_CONNECTIONS, dropped }, 'connection closed unanswered: the listener is at MAX_CONNECTIONS');
      });
      server.on('clientError', answerClientError(listener, publicBaseUrl(config), logger));
      server.once('error', (err) => reject(listenRefusal(listener, host, port, err)));
      server.listen(port, host, () => {
        this.servers.push(server);
        const addr = server.address() as { address: string; port: number };
        resolve(`http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}`);
      });
    });
  }

  /** Runs `step`, retrying with backoff (one log line per attempt) while the database is unreachable, until it succeeds or the runtime stops. */
  private async untilReachable<T>(name: string, step: () => Promise<T>): Promise<T> {
    for (let attempt = 1, waitMs = START_RETRY_FIRST_MS; ; attempt++, waitMs = Math.min(waitMs * 2, START_RETRY_MAX_MS)) {
      this.stopped.signal.throwIfAborted();
      try {
        return await step();
      } catch (err) {
        const failure = isConnectionFailure(err) ? err : isConnectionFailure((err as Error)?.cause) ? (err as Error).cause : null;
        if (!failure) throw err;
        const { code, message } = failure as { code?: string; message?: string };
        this.logger.warn({ step: name, attempt, retryInMs: waitMs, code, reason: message }, 'database unreachable at start; retrying');
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, waitMs);
          this.stopped.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
        });
      }
    }
  }

  /**
   * The router over the primary and DATABASE_REPLICA_URLS (db/replicas.ts):
   * each replica gets a gated pool like the primary's, named replica-1, -2, …
   * in the list's order (never by URL: it may hold a password).
   */
  private replicaRouter(primary: Database, gate: DatabaseOptions, pool: (url: string, name: string) => Sql): ReplicaRouter {
    const { config, logger } = this;
    const replicas = config.DATABASE_REPLICA_URLS.map((url, i) => {
      const name = `replica-${i + 1}`;
      return {
        name,
        url,
        db: new Database(name, pool(url, name), new DatabaseHealth(url, name, logger, 'its reads run on the primary until a probe succeeds'), gate),
      };
    });
    this.replicas = new ReplicaRouter(primary, this.databaseUrl, replicas, { maxLagMs: config.DATABASE_REPLICA_MAX_LAG_MS, gate }, logger);
    this.replicas.start();
    return this.replicas;
  }

  private openPools(): AppDeps {
    const { config, logger } = this;
    const gate = { connections: config.DATABASE_POOL_SIZE, acquireTimeoutMs: config.DATABASE_ACQUIRE_TIMEOUT_MS, maxWaiting: config.DATABASE_MAX_WAITING };
    const pool = (url: string, name: string, synchronousCommit?: 'off', max = config.DATABASE_POOL_SIZE) =>
      createSql(url, {
        max,
        name,
        statementTimeoutMs: config.DATABASE_STATEMENT_TIMEOUT_MS,
        synchronousCommit,
        poolMode: config.DATABASE_POOL_MODE,
        preparedStatements: config.DATABASE_PREPARED_STATEMENTS,
      });
    const primaryHealth = new DatabaseHealth(this.databaseUrl, 'primary', logger);
    this.primarySql = pool(this.databaseUrl, 'primary');
    const db = new Database('primary', this.primarySql, primaryHealth, gate);
    // Key resolution and request counting run on every /v1 request. Their commits
    // skip the WAL flush wait (synchronous_commit=off): a crash can lose the last
    // fraction of a second of counter increments and lastUsedAt times, never data.
    // Its units are batches of admissions (keys/admission.ts) and lastUsedAt writes.
    const authDb = new Database('auth', pool(this.databaseUrl, 'auth', 'off', AUTH_CONNECTIONS), primaryHealth, { ...gate, connections: AUTH_CONNECTIONS });
    const readDb = config.DATABASE_REPLICA_URLS.length ? this.replicaRouter(db, gate, pool) : db;
    const workers = new WorkerPool({
      threads: config.WORKER_THREADS,
      maxQueue: config.WORKER_MAX_QUEUE,
      taskTimeoutMs: config.WORKER_TASK_TIMEOUT_MS,
      niceIncrement: config.WORKER_NICE,
    });
    const macro = macroServiceOf(db, logger, config);
    // Two checks may wait per hashing thread, for at most 2 s: a sign-in that
    // finds more ahead of it is refused at once rather than queued.
    const passwords = new PasswordHasher({
      threads: config.PASSWORD_HASH_THREADS,
      maxWaiting: 2 * config.PASSWORD_HASH_THREADS,
      waitMs: 2_000,
      niceIncrement: config.WORKER_NICE,
    });
    return {
      config,
      db,
      authDb,
      readDb,
      logger,
      pool: workers,
      lastUsed: new LastUsedRecorder(authDb),
      macro,
      adminToken: this.adminToken,
      version: VERSION,
      passwords,
    };
  }
}

/** Creates and starts a runtime; resolves once it serves the API. */
export async function startRuntime(config: Config, logger: Logger): Promise<Runtime> {
  const runtime = new Runtime(config, logger);
  await runtime.start();
  return runtime;
}
