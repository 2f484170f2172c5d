import express, { type Express } from 'express';
import { publicBaseUrl, type Config } from './config.ts';
import type { Logger } from './observability/logger.ts';
import type { AppDeps } from './wiring/deps.ts';
import { AREAS, ingestKinds, publicRouteDefinitions } from './wiring/areas.ts';
import { referencePage } from './http/api-reference.ts';
import { adminDocument, publicDocument } from './wiring/api-documents.ts';
import { answerHeaders } from './http/answer-headers.ts';
import { compressResponses } from './http/compression.ts';
import { observeRequests } from './http/observe.ts';
import { publicRoutes } from './http/router.ts';
import { registry, renderMetrics } from './observability/metrics.ts';
import { Admissions } from './keys/admission.ts';
import { authorize } from './keys/service.ts';
import { deriveAll, deriveChanged } from './wiring/derivations.ts';
import { adminRouter, requireAdminToken } from './admin/routes.ts';
import { readStatus } from './admin/status.ts';
import { dashboardRouter } from './dashboard/routes.ts';
import { AppError } from './core/errors.ts';
import { errorMiddleware, routeNotFound } from './http/errors.ts';
import { ReplicaRouter } from './db/replica-router.ts';
import { withReadScope } from './db/read-scope.ts';

function baseApp(config: Config): Express {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  // req.ip: the client's address behind the proxies TRUST_PROXY names (the dashboard's sign-in limits count it).
  app.set('trust proxy', config.TRUST_PROXY);
  app.use(answerHeaders);
  return app;
}

function metricsRoute(app: Express): void {
  app.get('/metrics', async (_req, res) => {
    res.type(registry.contentType).send(await renderMetrics());
  });
}

/**
 * The public listener. /healthz says the process answers; /readyz that it
 * can serve, which needs the database. Metrics are not here: they describe
 * admin activity and the service's internals, so they are served on the
 * admin listener (loopback by default), like the rest of the operator's view.
 */
export function buildPublicApp(deps: AppDeps): Express {
  const app = baseApp(deps.config);
  app.use(observeRequests('public', deps.logger, deps.config.CLIENT_IDLE_TIMEOUT_MS));
  app.use(compressResponses());
  // Which server a request's reads used, and its asOf, for the replica router (db/replica-router.ts).
  if (deps.readDb instanceof ReplicaRouter) app.use((_req, _res, next) => withReadScope(next));
  app.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  // Ready when the primary answers: keys and counting run there, and reads fall back to it.
  app.get('/readyz', async (_req, res) => {
    await deps.db.ping();
    res.json({ status: 'ready' });
  });
  const admissions = new Admissions(deps.authDb, {
    sandbox: { perMinute: deps.config.RATE_LIMIT_SANDBOX_PER_MINUTE, perDay: deps.config.RATE_LIMIT_SANDBOX_PER_DAY },
    live: { perMinute: deps.config.RATE_LIMIT_LIVE_PER_MINUTE, perDay: deps.config.RATE_LIMIT_LIVE_PER_DAY },
  });
  const v1 = publicRoutes(
    { authorize: (authorization, scope) => authorize(admissions, authorization, scope), lastUsed: deps.lastUsed },
    deps.config.REQUEST_BODY_LIMIT,
  );
  for (const area of AREAS) area.mount(v1, deps);
  const reference = publicDocument(deps.version);
  const document = JSON.stringify(reference);
  app.get('/v1/openapi.json', (_req, res) => {
    res.type('json').send(document);
  });
  app.use(referencePage(reference));
  app.use('/v1', v1.build(publicRouteDefinitions()));
  // The account dashboard's pages (docs/dashboard.md): outside the API and its document.
  app.use('/account', dashboardRouter(deps));
  app.use(routeNotFound);
  app.use(errorMiddleware(publicBaseUrl(deps.config), (err, req) => deps.logger.error({ err, requestId: req.res?.locals.requestId }, 'request failed')));
  return app;
}

/** The admin listener: /metrics without a token (read-only, no secrets), everything under /admin/v1 behind the admin token. */
export function buildAdminApp(deps: AppDeps): Express {
  const app = baseApp(deps.config);
  app.use(observeRequests('admin', deps.logger));
  app.use(compressResponses());
  metricsRoute(app);
  app.use(requireAdminToken(deps.adminToken));
  const document = JSON.stringify(adminDocument(deps.version));
  app.get('/admin/v1/openapi.json', (_req, res) => {
    res.type('json').send(document);
  });
  app.use(
    '/admin/v1',
    adminRouter({
      db: deps.db,
      deriveAll: (request) => deriveAll(deps, request),
      deriveChanged: (changes) => deriveChanged(deps, changes),
      ingestKinds: ingestKinds(),
      uploads: {
        maxConcurrent: deps.config.INGEST_MAX_CONCURRENT,
        waitTimeoutMs: deps.config.DATABASE_ACQUIRE_TIMEOUT_MS,
        maxWaiting: deps.config.DATABASE_MAX_WAITING,
        idleTimeoutMs: deps.config.CLIENT_IDLE_TIMEOUT_MS,
      },
      status: () => deps.db.run((sql) => readStatus(sql, { threads: deps.pool.threads, queueDepth: deps.pool.queueDepth }, deps.version)),
      bodyLimit: '1mb',
      publicBaseUrl: publicBaseUrl(deps.config),
      invitationHours: deps.config.DASHBOARD_INVITATION_HOURS,
      passwords: deps.passwords,
    }),
  );
  app.use(routeNotFound);
  app.use(errorMiddleware(publicBaseUrl(deps.config), (err, req) => deps.logger.error({ err, requestId: req.res?.locals.requestId }, 'admin request failed')));
  return app;
}

/**
 * What a listener answers while the service starts (waiting for the
 * database, migrating, loading the demo set): /healthz 200, /metrics on the
 * admin listener, and 503 overloaded with Retry-After for everything else,
 * /readyz included.
 */
export function buildStartingApp(listener: 'public' | 'admin', config: Config, logger: Logger): Express {
  const app = baseApp(config);
  app.use(observeRequests(listener, logger));
  if (listener === 'public') {
    app.get('/healthz', (_req, res) => {
      res.json({ status: 'ok' });
    });
    // Not ready until started: its own route, so its 503s are counted under /readyz.
    app.get('/readyz', () => {
      throw new AppError('overloaded', 'the service is starting; retry shortly', {}, { 'Retry-After': '1' });
    });
  } else {
    metricsRoute(app);
  }
  app.use(() => {
    throw new AppError('overloaded', 'the service is starting; retry shortly', {}, { 'Retry-After': '1' });
  });
  app.use(errorMiddleware(publicBaseUrl(config), () => {}));
  return app;
}
