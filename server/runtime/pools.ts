import type { AppDeps } from '../wiring/deps.ts';
import type { Config } from '../config.ts';
import { Database, type DatabaseOptions } from '../db/database.ts';
import { DatabaseHealth } from '../db/health.ts';
import { ReplicaRouter } from '../db/replica-router.ts';
import { createSql, type Sql } from '../db/sql.ts';
import { PasswordHasher } from '../dashboard/password.ts';
import { LastUsedRecorder } from '../keys/service.ts';
import type { Logger } from '../observability/logger.ts';
import { macroServiceOf } from '../macro/service.ts';
import { WorkerPool } from '../../workers/pool.ts';
import { downloadSlots } from './primary-link.ts';

// Connections of the auth pool. Requests that arrive while its statements are
// in flight are admitted together in the next one (keys/admission.ts), so
// fewer connections make larger batches. With 50 clients on 2 cores, one
// request's service CPU was 0.15 to 0.18 ms with 1 connection (about 20
// requests a statement), 0.17 to 0.19 with 2 (12), 0.18 to 0.19 with 4 (7)
// and 0.20 to 0.22 with 10 (4). Two keep a second statement ready while one
// waits on a row lock or the network.
const AUTH_CONNECTIONS = 2;

/** What openPools opened: the service's dependencies but the list cursors (their key is read through these pools), the primary pool without its gate, and the replica router if there are replicas. */
export interface OpenedPools {
  deps: Omit<AppDeps, 'cursors'>;
  primarySql: Sql;
  replicas: ReplicaRouter | null;
}

/**
 * The router over the primary and DATABASE_REPLICA_URLS (db/replica-router.ts):
 * each replica gets a gated pool like the primary's, named replica-1, -2, …
 * in the list's order (never by URL: it may hold a password).
 */
function replicaRouter(
  config: Config,
  logger: Logger,
  primary: Database,
  primaryUrl: string,
  gate: DatabaseOptions,
  pool: (url: string, name: string) => Sql,
): ReplicaRouter {
  const replicas = config.DATABASE_REPLICA_URLS.map((url, i) => {
    const name = `replica-${i + 1}`;
    return {
      name,
      url,
      db: new Database(name, pool(url, name), new DatabaseHealth(url, name, logger, 'its reads run on the primary until a probe succeeds'), gate),
    };
  });
  const router = new ReplicaRouter(primary, primaryUrl, replicas, { maxLagMs: config.DATABASE_REPLICA_MAX_LAG_MS, gate }, logger);
  router.start();
  return router;
}

/** The primary's gated pools (requests and auth), the replica router, the worker threads and the password hasher: the service's dependencies. */
export function openPools(config: Config, logger: Logger, databaseUrl: string, service: Pick<AppDeps, 'adminToken' | 'version'>): OpenedPools {
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
  const primaryHealth = new DatabaseHealth(databaseUrl, 'primary', logger);
  const primarySql = pool(databaseUrl, 'primary');
  const db = new Database('primary', primarySql, primaryHealth, gate);
  // Key resolution and request counting run on every /v1 request. Their commits
  // skip the WAL flush wait (synchronous_commit=off): a crash can lose the last
  // fraction of a second of counter increments and lastUsedAt times, never data.
  // Its units are batches of admissions (keys/admission.ts) and lastUsedAt writes.
  const authDb = new Database('auth', pool(databaseUrl, 'auth', 'off', AUTH_CONNECTIONS), primaryHealth, { ...gate, connections: AUTH_CONNECTIONS });
  const replicas = config.DATABASE_REPLICA_URLS.length ? replicaRouter(config, logger, db, databaseUrl, gate, pool) : null;
  const readDb = replicas ?? db;
  const workers = new WorkerPool({
    threads: config.WORKER_THREADS,
    maxQueue: config.WORKER_MAX_QUEUE,
    taskTimeoutMs: config.WORKER_TASK_TIMEOUT_MS,
    niceIncrement: config.WORKER_NICE,
  });
  const macro = macroServiceOf(db, logger, config);
  // Two checks may wait per hashing thread, for at most PASSWORD_HASH_WAIT_MS, ranked
  // (dashboard/password.ts): an arrival ranked no better than every waiter of
  // a full queue is refused at once; a better one takes the worst waiter's place.
  const passwords = new PasswordHasher({
    threads: config.PASSWORD_HASH_THREADS,
    maxWaiting: 2 * config.PASSWORD_HASH_THREADS,
    waitMs: config.PASSWORD_HASH_WAIT_MS,
    niceIncrement: config.WORKER_NICE,
  });
  return {
    deps: {
      config,
      db,
      authDb,
      readDb,
      logger,
      pool: workers,
      lastUsed: new LastUsedRecorder(authDb),
      macro,
      adminToken: service.adminToken,
      version: service.version,
      passwords,
      downloadSlots,
    },
    primarySql,
    replicas,
  };
}
