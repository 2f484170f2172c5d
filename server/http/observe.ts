import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { httpDuration, httpRequests } from '../metrics.ts';

const INCOMING_ID = /^[A-Za-z0-9._-]{1,128}$/;

/**
 * Request id, one structured log line per request, and the HTTP metrics.
 * The log carries the path without its query string and never a header, so
 * neither API keys nor admin tokens nor secret-bearing parameters reach it.
 */
export function observeRequests(listener: 'public' | 'admin', logger: Logger): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = incoming && INCOMING_ID.test(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => finish(false));
    res.on('close', () => finish(true));
    let done = false;
    function finish(closed: boolean) {
      if (done) return;
      done = true;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      // baseUrl is reset when an error leaves a router, so routers record their mount point.
      const route = req.route ? `${res.locals.routePrefix ?? req.baseUrl}${req.route.path}` : 'unmatched';
      const status = closed && !res.writableFinished ? 'aborted' : String(res.statusCode);
      const labels = { listener, method: req.method, route, status };
      httpRequests.inc(labels);
      httpDuration.observe(labels, seconds);
      logger.info(
        {
          requestId,
          listener,
          method: req.method,
          route,
          // The path only: query strings may carry secrets.
          path: req.originalUrl.split('?')[0],
          status: res.statusCode,
          aborted: status === 'aborted' || undefined,
          durationMs: Math.round(seconds * 1e4) / 10,
          errorCode: res.locals.errorCode,
          environment: res.locals.auth?.environment,
          keyId: res.locals.auth?.keyId,
        },
        'request',
      );
    }
    next();
  };
}

/** First middleware of a mounted router: lets the metrics label name the full route template. */
export function routePrefix(prefix: string): RequestHandler {
  return (_req, res, next) => {
    res.locals.routePrefix = prefix;
    next();
  };
}
