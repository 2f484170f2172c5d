import express, { type Express } from 'express';
import type { Config } from './config.ts';
import type { Sql } from './db/sql.ts';
import type { Logger } from './logger.ts';
import type { WorkerPool } from '../workers/pool.ts';
import { errorMiddleware, routeNotFound } from './http/errors.ts';
import { observeRequests } from './http/observe.ts';
import { createPublicRouter, type PublicRouter } from './http/router.ts';
import type { LastUsedRecorder } from './keys/service.ts';
import { registry } from './metrics.ts';
import { adminRouter, requireAdminToken } from './admin/routes.ts';
import { readStatus } from './admin/status.ts';
import type { IngestKind } from './admin/ingest.ts';
import { instrumentsArea } from './instruments/routes.ts';
import { pricesArea } from './prices/routes.ts';
import { actionsArea } from './actions/routes.ts';
import { analyticsArea } from './analytics/routes.ts';

export interface AppDeps {
  config: Config;
  /** Writes, and reads that must see them. */
  sql: Sql;
  /** Key resolution and request counting (commits without waiting for the WAL flush). */
  authSql: Sql;
  /** Read-only queries; the replica when DATABASE_READ_URL is set, else `sql`. */
  readSql: Sql;
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

export function buildPublicApp(deps: AppDeps): Express {
  const app = baseApp();
  app.use(observeRequests('public', deps.logger));
  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await registry.metrics());
  });
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  app.get('/readyz', async (_req, res) => {
    await deps.readSql`select 1`;
    res.json({ status: 'ready' });
  });
  const v1 = createPublicRouter(
    {
      sql: deps.authSql,
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

export function buildAdminApp(deps: AppDeps): Express {
  const app = baseApp();
  app.use(observeRequests('admin', deps.logger));
  app.use(requireAdminToken(deps.adminToken));
  app.use(
    '/admin/v1',
    adminRouter({
      sql: deps.sql,
      ingestKinds: ingestKinds(),
      status: () => readStatus(deps.sql, { threads: deps.pool.threads, queueDepth: deps.pool.queueDepth }, deps.version),
      extraRoutes: (router) => AREAS.forEach((a) => a.adminRoutes?.(router, deps)),
    }),
  );
  app.use(routeNotFound);
  app.use(errorMiddleware(deps.config.DOCS_BASE_URL, (err, req) => deps.logger.error({ err, requestId: req.res?.locals.requestId }, 'admin request failed')));
  return app;
}
