import { randomUUID } from 'node:crypto';
import { createServer, STATUS_CODES, type RequestListener, type Server } from 'node:http';
import { BlockList, type SocketAddress, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { publicBaseUrl, type Config } from '../config.ts';
import { AppError } from '../core/errors.ts';
import { ANSWER_HEADERS } from '../http/answer-headers.ts';
import { errorBody } from '../http/errors.ts';
import type { Logger } from '../observability/logger.ts';
import { connectionsDropped, httpRequests } from '../observability/metrics.ts';
import { entryOf } from '../core/map-entry.ts';

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

// A listener closing connections unanswered logs one line per reason at most
// this often, with the count of such connections since it started.
const DROP_LOG_INTERVAL_MS = 10_000;

type DropReason = 'max_connections' | 'per_address' | 'first_byte_timeout';

// A connection closed at a cap is a client refused (warn); one closed before
// its first byte is routine for a browser that opened it in advance (info).
const DROPS: Record<DropReason, { level: 'warn' | 'info'; message: string; limit: (config: Config) => Record<string, number> }> = {
  max_connections: {
    level: 'warn',
    message: 'connection closed unanswered: the listener is at MAX_CONNECTIONS',
    limit: (config) => ({ maxConnections: config.MAX_CONNECTIONS }),
  },
  per_address: {
    level: 'warn',
    message: 'connection closed unanswered: its address has MAX_CONNECTIONS_PER_ADDRESS open',
    limit: (config) => ({ maxConnectionsPerAddress: config.MAX_CONNECTIONS_PER_ADDRESS }),
  },
  first_byte_timeout: {
    level: 'info',
    message: 'connection closed unanswered: no request began within FIRST_BYTE_TIMEOUT_MS',
    limit: (config) => ({ firstByteTimeoutMs: config.FIRST_BYTE_TIMEOUT_MS }),
  },
};

/** Counts each connection a listener closes unanswered, and logs it at most every DROP_LOG_INTERVAL_MS per reason. */
function dropRecorder(listener: 'public' | 'admin', config: Config, logger: Logger) {
  const dropped: Record<DropReason, number> = { max_connections: 0, per_address: 0, first_byte_timeout: 0 };
  const loggedAt: Record<DropReason, number> = { max_connections: -Infinity, per_address: -Infinity, first_byte_timeout: -Infinity };
  return (reason: DropReason, fields: Record<string, string> = {}) => {
    dropped[reason]++;
    connectionsDropped.inc({ listener, reason });
    if (Date.now() - loggedAt[reason] < DROP_LOG_INTERVAL_MS) return;
    loggedAt[reason] = Date.now();
    const { level, message, limit } = DROPS[reason];
    logger[level]({ listener, ...fields, ...limit(config), dropped: dropped[reason] }, message);
  };
}

const IPV4_MAPPED = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i;

/** The address a connection is counted under: an IPv4 client of a listener on :: arrives as ::ffff:a.b.c.d and is counted as a.b.c.d. */
export function peerAddress(remoteAddress: string | undefined): string | undefined {
  return remoteAddress?.replace(IPV4_MAPPED, '$1');
}

/**
 * The connections open from each TCP peer address, and the cap on them, as
 * the block list Node consults for every accepted connection before it makes
 * a socket of it (net.Server's blockList: http.Server inherits the check but
 * not the option, so openListener assigns it). Refused there, a connection
 * costs a getpeername and a close; refused in a 'connection' listener, it
 * would cost a Socket, an HTTP parser and their teardown. With 4,150 idle
 * sockets from one address, each reopened as soon as it was closed, a bare
 * Node server answered another address with a p99 of 9 to 10 ms refusing
 * here, and 150 to 650 ms refusing in a 'connection' listener (2 cores).
 */
class ConnectionsPerAddress extends BlockList {
  private readonly open = new Map<string, number>();
  private readonly cap: number;
  private readonly refused: (address: string) => void;

  constructor(cap: number, refused: (address: string) => void) {
    super();
    this.cap = cap;
    this.refused = refused;
  }

  /** Whether Node is to close this new connection: its address has the cap open. */
  override check(address: string | SocketAddress): boolean {
    const peer = peerAddress(typeof address === 'string' ? address : address.address);
    if (peer === undefined || (this.open.get(peer) ?? 0) < this.cap) return false;
    this.refused(peer);
    return true;
  }

  /** Counts an accepted connection against its address until it closes. */
  opened(socket: Socket): void {
    // No address: the peer reset the connection before it was accepted, and it is closing anyway.
    const peer = peerAddress(socket.remoteAddress);
    if (peer === undefined) return;
    this.open.set(peer, (this.open.get(peer) ?? 0) + 1);
    socket.once('close', () => {
      const left = entryOf(this.open, peer) - 1;
      if (left) this.open.set(peer, left);
      else this.open.delete(peer);
    });
  }
}

/**
 * Holds each new connection to MAX_CONNECTIONS_PER_ADDRESS open from its TCP
 * peer's address (a connection beyond it is closed at once, unanswered, as at
 * MAX_CONNECTIONS) and to FIRST_BYTE_TIMEOUT_MS for the first byte of its
 * first request (else it is closed, unanswered). A client that keeps
 * thousands of idle connections open from one address, reopening each as it
 * is closed, thus holds at most the cap, and the listener's other connections
 * stay free for everyone else.
 */
function limitConnections(server: Server, config: Config, drop: ReturnType<typeof dropRecorder>): void {
  const perAddress = config.MAX_CONNECTIONS_PER_ADDRESS
    ? new ConnectionsPerAddress(config.MAX_CONNECTIONS_PER_ADDRESS, (address) => drop('per_address', { address }))
    : null;
  // Node reads the server's blockList at each accept; @types/node declares it on neither server type.
  if (perAddress) Object.assign(server, { blockList: perAddress });
  // Node's headers deadline also runs from the connection's opening: past it, a silent connection gets its 408 there.
  const firstByteMs = config.FIRST_BYTE_TIMEOUT_MS < config.HEADERS_TIMEOUT_MS ? config.FIRST_BYTE_TIMEOUT_MS : 0;
  server.prependListener('connection', (socket: Socket) => {
    perAddress?.opened(socket);
    if (!firstByteMs) return;
    // bytesRead counts what the kernel handed over, also while the HTTP parser reads the socket itself.
    const timer = setTimeout(() => {
      if (socket.bytesRead || socket.destroyed) return;
      socket.destroy();
      drop('first_byte_timeout');
    }, firstByteMs);
    socket.once('close', () => clearTimeout(timer));
  });
}

/** A listener that cannot bind, as one line naming the port and the variable that sets it. */
export class ListenError extends Error {}

function listenRefusal(listener: 'public' | 'admin', host: string, port: number, err: NodeJS.ErrnoException): ListenError {
  const variable = listener === 'public' ? 'PORT' : 'ADMIN_PORT';
  if (err.code === 'EADDRINUSE') {
    return new ListenError(`port ${port} (${variable}) is already in use on ${host}: stop the process using it or set ${variable} to a free port`, {
      cause: err,
    });
  }
  const variables = listener === 'public' ? `HOST, ${variable}` : `ADMIN_HOST, ${variable}`;
  return new ListenError(`cannot listen on ${host}:${port} (${variables}): ${err.message}`, { cause: err });
}

/** The errors the listener answers for Node's own refusals, by Node's code, before any route sees the request (docs/api.md lists them with the routes'). */
export const CLIENT_ERRORS: Record<string, { status: number; error: () => AppError }> = {
  HPE_HEADER_OVERFLOW: { status: 431, error: () => new AppError('request_header_too_large', `the request line and headers exceed ${MAX_HEADER_BYTES} bytes`) },
  ERR_HTTP_REQUEST_TIMEOUT: { status: 408, error: () => new AppError('request_timeout', 'the request was not received in time') },
};

/** The headers every answer carries (ANSWER_HEADERS), as the lines of an answer written by hand. */
const ANSWER_HEADER_LINES = Object.entries(ANSWER_HEADERS)
  .map(([name, value]) => `${name}: ${value}\r\n`)
  .join('');

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
        `X-Request-Id: ${requestId}\r\n${ANSWER_HEADER_LINES}Connection: close\r\n\r\n${body}`,
    );
    const linger = setTimeout(() => socket.destroy(), CLIENT_ERROR_LINGER_MS).unref();
    socket.once('close', () => clearTimeout(linger));
    httpRequests.inc({ listener, method: 'unparsed', route: 'unparsed', status: String(status) });
    logger.info({ requestId, listener, route: 'unparsed', status, errorCode: appError.code, reason: err.code }, 'request');
  };
}

/**
 * Listens with the slow-client and connection limits: a new connection must
 * send its first byte within FIRST_BYTE_TIMEOUT_MS, else it is closed; a
 * request's line and headers must arrive within HEADERS_TIMEOUT_MS, the whole
 * request within `requestTimeout` (REQUEST_TIMEOUT_MS by default), else 408
 * and the connection is closed; beyond MAX_CONNECTIONS open connections, or
 * MAX_CONNECTIONS_PER_ADDRESS from the new one's address, each new one is
 * closed as soon as it is accepted, so the client sees its connection closed
 * (a reset or an end of stream) before any answer, at once.
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
    const drop = dropRecorder(listener, config, logger);
    server.on('drop', () => drop('max_connections'));
    limitConnections(server, config, drop);
    server.on('clientError', answerClientError(listener, publicBaseUrl(config), logger));
    server.once('error', (err) => reject(listenRefusal(listener, host, port, err)));
    // The kernel's queue of connections not yet accepted (the backlog) holds
    // MAX_CONNECTIONS; Linux caps it at net.core.somaxconn, 4,096 by default
    // since 5.4. An address at MAX_CONNECTIONS_PER_ADDRESS that reopens each
    // refused connection at once keeps its other sockets in flight, mostly in
    // this queue; were it full, the kernel would drop every client's new
    // connections, retried after 1 s, then 3 s. With Node's default of 511
    // and 4,150 such sockets from one address, another address's p99 was
    // 1,056 ms (max 3,082 ms).
    server.listen({ port, host, backlog: config.MAX_CONNECTIONS }, () => {
      const addr = server.address() as { address: string; port: number };
      resolve({ server, url: `http://${addr.address.includes(':') ? `[${addr.address}]` : addr.address}:${addr.port}` });
    });
  });
}
