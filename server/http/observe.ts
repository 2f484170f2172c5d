import { randomUUID } from 'node:crypto';
import type { RequestHandler } from 'express';
import type { Logger } from 'pino';
import { holdsSecret } from '../observability/logger.ts';
import { httpDuration, httpRequests, idleClosed } from '../observability/metrics.ts';

// A client's own request id is echoed in a header and written to the log, so
// it is kept only when it is short and of safe characters, and never when it
// could be a key or a secret: a key prefix, or a run of 43 base64url
// characters (a secret's length), whatever its letters.
const INCOMING_ID = /^[A-Za-z0-9._-]{1,64}$/;
const SECRET_LENGTH_RUN = /[A-Za-z0-9_-]{43}/;

const acceptedId = (incoming: string | undefined): incoming is string =>
  incoming !== undefined && INCOMING_ID.test(incoming) && !SECRET_LENGTH_RUN.test(incoming) && !holdsSecret(incoming);

// The dashboard's paths are logged as their route template (or as
// UNMATCHED_ACCOUNT_PATH when no route matched), never as sent: an account
// holder may paste a password or a key into the address bar, and nothing
// tells such a segment apart from a page's name. A path is the dashboard's
// however it is written, routed or not (Express matches the mount point in
// any case; //account/..., /account%2F... and /./account/... reach no
// route): its escapes decoded in three passes, for a path encoded two or
// three times (a fixed count: decoding until nothing changes would take one
// pass per level a hostile path nests), backslashes and runs of slashes read
// as one slash, dot segments resolved.
const ACCOUNT_PATH = /^\/account(?![\w-])/i;
const UNMATCHED_ACCOUNT_PATH = '/account/[unmatched]';
const MAYBE_ACCOUNT = /account|%/i;
const ESCAPE = /%([0-9a-f]{2})/gi;
const DECODE_PASSES = 3;

function readsAsAccountPath(path: string): boolean {
  if (!MAYBE_ACCOUNT.test(path)) return false;
  let decoded = path;
  for (let pass = 0; pass < DECODE_PASSES; pass++) decoded = decoded.replace(ESCAPE, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  const segments: string[] = [];
  for (const segment of decoded.split(/[\\/]+/)) {
    if (segment === '..') segments.pop();
    else if (segment !== '.' && segment !== '') segments.push(segment);
  }
  return ACCOUNT_PATH.test(`/${segments.join('/')}`);
}

// An absolute-form target (GET http://host/path HTTP/1.1, RFC 9112 3.2.2)
// names a host, and may carry user information, before its path; Express
// routes on the path alone.
const SCHEME_AND_AUTHORITY = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i;

/** The path Express routes `target` by: without an absolute-form target's scheme and authority, and without the query (which may carry secrets) or a fragment. */
function pathOf(target: string): string {
  const path = target.replace(SCHEME_AND_AUTHORITY, '').split(/[?#]/, 1)[0];
  if (path === '') return '/';
  return path.startsWith('/') ? path : '[not a path]';
}

/**
 * Request id, one structured log line per request, and the HTTP metrics.
 * The log carries the path without its query string and never a header, so
 * neither API keys nor admin tokens nor secret-bearing parameters reach it.
 *
 * With `idleTimeoutMs`, a request whose connection carries nothing either way
 * for that long is closed, logged and counted: a client that stopped reading
 * holds a socket and its unsent bytes, and nothing else, until then. The
 * server's own work on a public request is bounded well below it (a second
 * for a connection, DATABASE_STATEMENT_TIMEOUT_MS per statement, the worker
 * task timeout). The socket counts as active whenever a write completes, and
 * the kernel frees send-buffer space in large steps (buffers grow to 4 MB
 * here), so a reader is taken as idle when it reads less than about 1.5 MB
 * per idle period: with a 3 s timeout, 500 KB/s readers received a 20 MB body
 * and 300 KB/s ones were cut. At the 120 s default that is about 12 KB/s.
 */
export function observeRequests(listener: 'public' | 'admin', logger: Logger, idleTimeoutMs?: number): RequestHandler {
  return (req, res, next) => {
    const incoming = req.get('x-request-id');
    const requestId = acceptedId(incoming) ? incoming : randomUUID();
    res.locals.requestId = requestId;
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    // baseUrl is reset when an error leaves a router, so routers record their mount point.
    // `unmatched` only for a path nothing serves: a static mount names itself (servedAs).
    const routeOf = () => (req.route ? `${res.locals.routePrefix ?? req.baseUrl}${req.route.path}` : (res.locals.servedAs ?? 'unmatched'));
    if (idleTimeoutMs) {
      res.setTimeout(idleTimeoutMs, () => {
        const route = routeOf();
        idleClosed.inc({ listener, route });
        logger.warn(
          { requestId, listener, route, idleMs: idleTimeoutMs, bytesWritten: res.socket?.bytesWritten },
          'connection closed: it carried nothing either way for the idle timeout',
        );
        res.destroy();
      });
    }
    res.on('finish', () => finish(false));
    res.on('close', () => finish(true));
    let done = false;
    function finish(closed: boolean) {
      if (done) return;
      done = true;
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const route = routeOf();
      const path = pathOf(req.originalUrl);
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
          path: readsAsAccountPath(path) ? (route === 'unmatched' ? UNMATCHED_ACCOUNT_PATH : route) : path,
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

/**
 * First middleware of a mount that serves files (express.static), which has
 * no route template: the label its requests carry in logs and metrics
 * (`/docs/assets/*`), answered or not, as a route's 404 carries its route.
 */
export function servedAs(label: string): RequestHandler {
  return (_req, res, next) => {
    res.locals.servedAs = label;
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
