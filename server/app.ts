import express, { type Express } from 'express';
import type { Config } from './config.ts';
import type { Database } from './db/database.ts';
import type { Logger } from './logger.ts';
import type { WorkerPool } from '../workers/pool.ts';
import { AppError, errorMiddleware, routeNotFound } from './http/errors.ts';
import { observeRequests } from './http/observe.ts';
import { createPublicRouter, type PublicRouter } from './http/router.ts';
import type { LastUsedRecorder } from './keys/service.ts';
import { registry } from './metrics.ts';
import { adminRouter, requireAdminToken } from './admin/routes.ts';
import { readStatus } from './admin/status.ts';
import type { IngestKind } from './ingest/kind.ts';
import { instrumentsArea } from './instruments/routes.ts';
import { pricesArea } from './prices/routes.ts';
import { actionsArea } from './actions/routes.ts';
import { analyticsArea } from './analytics/routes.ts';

export interface AppDeps {
  config: Config;
  /** Writes, admin work, and reads that must see them. */
  db: Database;
  /** Key resolution and request counting (its own pool, committing without waiting for the WAL flush). */
  authDb: Database;
  /** Read-only queries; the replica when DATABASE_READ_URL is set, else `db`. */
  readDb: Database;
  logger: Logger;
  pool: WorkerPool;
  lastUsed: LastUsedRecorder;
  adminToken: string;
  version: string;
}

/** One API area: its public routes and the admin ingest kinds it adds. */
export interface Area {
  routes?(router: PublicRouter, deps: AppDeps): void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own row type
  ingest?: Record<string, IngestKind<any>>;
  adminRoutes?(router: express.Router, deps: AppDeps): void;
}

const AREAS: Area[] = [instrumentsArea, pricesArea, actionsArea, analyticsArea];

/** Admin upload routes by path (e.g. `bars/daily`), shared by the admin API and the CLI. */
export function ingestKinds(): Record<string, IngestKind<unknown>> {
  return Object.assign({}, ...AREAS.map((a) => a.ingest ?? {}));
}

function baseApp(): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  return app;
}

function metricsRoute(app: Express): void {
  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });
}

/**
 * The public listener. /healthz says the process answers; /readyz that it
 * can serve, which needs the database. Metrics are not here: they describe
 * admin activity and the service's internals, so they are served on the
 * admin listener (loopback by default), like the rest of the operator's view.
 */
export function buildPublicApp(deps: AppDeps): Express {
  const app = baseApp();
  app.use(observeRequests('public', deps.logger, deps.config.CLIENT_IDLE_TIMEOUT_MS));
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    await deps.readDb.run((sql) => sql`select 1`);
    if (deps.readDb !== deps.db) await deps.db.run((sql) => sql`select 1`);
    res.json({ status: 'ready' });
  });
  const v1 = createPublicRouter(
    {
      db: deps.authDb,
      lastUsed: deps.lastUsed,
      limits: {
        sandbox: { perMinute: deps.config.RATE_LIMIT_SANDBOX_PER_MINUTE, perDay: deps.config.RATE_LIMIT_SANDBOX_PER_DAY },
        live: { perMinute: deps.config.RATE_LIMIT_LIVE_PER_MINUTE, perDay: deps.config.RATE_LIMIT_LIVE_PER_DAY },
      },
    },
    deps.config.REQUEST_BODY_LIMIT,
  );
  for (const area of AREAS) area.routes?.(v1, deps);
  app.use('/v1', v1.router);
  app.use(routeNotFound);
  app.use(errorMiddleware(deps.config.DOCS_BASE_URL, (err, req) => deps.logger.error({ err, requestId: req.res?.locals.requestId }, 'request failed')));
  return app;
}

/** The admin listener: /metrics without a token (read-only, no secrets), everything under /admin/v1 behind the admin token. */
export function buildAdminApp(deps: AppDeps): Express {
  const app = baseApp();
  app.use(observeRequests('admin', deps.logger));
  metricsRoute(app);
  app.use(requireAdminToken(deps.adminToken));
  app.use(
    '/admin/v1',
    adminRouter({
      db: deps.db,
      ingestKinds: ingestKinds(),
      uploads: {
        maxConcurrent: deps.config.INGEST_MAX_CONCURRENT,
        waitTimeoutMs: deps.config.DATABASE_ACQUIRE_TIMEOUT_MS,
        maxWaiting: deps.config.DATABASE_MAX_WAITING,
        idleTimeoutMs: deps.config.CLIENT_IDLE_TIMEOUT_MS,
      },
      status: () => deps.db.run((sql) => readStatus(sql, { threads: deps.pool.threads, queueDepth: deps.pool.queueDepth }, deps.version)),
      extraRoutes: (router) => AREAS.forEach((a) => a.adminRoutes?.(router, deps)),
    }),
  );
  app.use(routeNotFound);
  app.use(errorMiddleware(deps.config.DOCS_BASE_URL, (err, req) => deps.logger.error({ err, requestId: req.res?.locals.requestId }, 'admin request failed')));
  return app;
}

/**
 * What a listener answers while the service starts (waiting for the
 * database, migrating, loading the demo set): /healthz 200, /metrics on the
 * admin listener, and 503 overloaded with Retry-After for everything else,
 * /readyz included.
 */
export function buildStartingApp(listener: 'public' | 'admin', config: Config, logger: Logger): Express {
  const app = baseApp();
  app.use(observeRequests(listener, logger));
  if (listener === 'public') {
    app.get('/healthz', (_req, res) => {
      res.json({ status: 'ok' });
    });
  } else {
    metricsRoute(app);
  }
  app.use(() => {
    throw new AppError('overloaded', 'the service is starting; retry shortly', {}, { 'Retry-After': '1' });
  });
  app.use(errorMiddleware(config.DOCS_BASE_URL, () => {}));
  return app;
}
