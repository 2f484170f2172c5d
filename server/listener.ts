import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { publicBaseUrl, type Config } from './config.ts';
import { AppError } from './core/errors.ts';
import { errorBody } from './http/errors.ts';
import type { Logger } from './logger.ts';
import { connectionsDropped, httpRequests } from './metrics.ts';

// 500 comma-separated UUIDs make an 18.5 KB query string, above Node's 16 KiB default.
const MAX_HEADER_BYTES = 64 * 1024;

// Node's default of 300 s would cut a multi-million-row ingest upload short;
// admin uploads may stream for up to an hour.
export const ADMIN_REQUEST_TIMEOUT_MS = 3_600_000;

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
 * Listens with the slow-client and connection limits: a request's line and
 * headers must arrive within HEADERS_TIMEOUT_MS, the whole request within
 * `requestTimeout` (REQUEST_TIMEOUT_MS by default), else 408 and the
 * connection is closed; beyond MAX_CONNECTIONS open connections, Node closes
 * each new one as soon as it is accepted, so the client sees its connection
 * closed (a reset or an end of stream) before any answer, at once.
 */
export function openListener(
  listener: 'public' | 'admin',
  port: number,
  host: string,
  handle: RequestListener,
  config: Config,
  logger: Logger,
  requestTimeout?: number,
): Promise<{ server: Server; url: string }> {
  return new Promise((resolve, reject) => {
    const server = createServer(
      {
        maxHeaderSize: MAX_HEADER_BYTES,
        headersTimeout: config.HEADERS_TIMEOUT_MS,
        // Node refuses a request timeout shorter than the headers timeout.
        requestTimeout: Math.max(requestTimeout ?? config.REQUEST_TIMEOUT_MS, config.HEADERS_TIMEOUT_MS),
        connectionsCheckingInterval: CONNECTIONS_CHECK_INTERVAL_MS,
      },
      handle,
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
      const addr = server.address() as { address: string; port: number };
      resolve({ server, url: `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}` });
    });
  });
}
