import type { ErrorRequestHandler, Request, RequestHandler } from 'express';
import { z } from 'zod';
import { AppError, errorCode, invalidRequest, zodDetails, type ErrorCode, type ErrorDetails } from '../core/errors.ts';
import { clipped } from '../core/received-words.ts';
import { isConnectionFailure } from '../db/health.ts';
import { redactSecrets } from '../observability/logger.ts';

/** A streamed response's client went away or stopped reading: nothing to answer, nothing to report as a fault. */
export class ClientGoneError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'ClientGoneError';
  }
}

// Besides an unreachable server: a server out of connection slots (53300),
// and this process's own pools closing during shutdown. All are shed with 503
// rather than reported as bugs.
const DATABASE_BUSY_OR_CLOSING = new Set(['53300', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED']);

function isDatabaseUnavailable(err: unknown): boolean {
  const code = errorCode(err);
  return isConnectionFailure(err) || (code !== undefined && DATABASE_BUSY_OR_CLOSING.has(code));
}

// A statement cancelled by the server: past DATABASE_STATEMENT_TIMEOUT_MS (the
// database too busy or blocked to answer in time), or by an operator's
// pg_cancel_backend. The service cancels nothing itself. Either is shed, not a bug.
const QUERY_CANCELED = '57014';

/**
 * The first escape of a path segment that is not percent-encoded UTF-8: a `%`
 * without two hex digits, or the escapes of one byte sequence that is not
 * UTF-8 (at most four). Only it is quoted back, not the segment, which may be
 * anything a client pasted (a password, under /account).
 */
function firstBadEscape(segment: string): string | undefined {
  for (const run of segment.match(/(?:%[0-9A-Fa-f]{0,2})+/g) ?? []) {
    const escapes = run.match(/%[0-9A-Fa-f]{0,2}/g) ?? [];
    let i = 0;
    while (i < escapes.length) {
      if (escapes[i].length < 3) return escapes[i];
      const lead = parseInt(escapes[i].slice(1), 16);
      const length = lead < 0x80 ? 1 : lead < 0xc2 || lead > 0xf4 ? 0 : lead < 0xe0 ? 2 : lead < 0xf0 ? 3 : 4;
      const sequence = escapes.slice(i, i + Math.max(length, 1)).join('');
      if (length === 0) return sequence;
      try {
        decodeURIComponent(sequence);
      } catch {
        return sequence;
      }
      i += length;
    }
  }
  return undefined;
}

export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof z.ZodError) return invalidRequest('request validation failed', zodDetails(err));
  if (isDatabaseUnavailable(err)) {
    return new AppError('overloaded', 'the database is unavailable; retry shortly', {}, { 'Retry-After': '1' });
  }
  if (errorCode(err) === QUERY_CANCELED) {
    return new AppError('overloaded', 'the database did not answer within the statement timeout; retry shortly', {}, { 'Retry-After': '1' });
  }
  const e = err as { type?: string; status?: number; expose?: boolean };
  // body-parser errors carry a status and a type; they are the client's fault.
  if (e?.type === 'entity.too.large') return new AppError('payload_too_large', 'request body is too large');
  if (e?.type === 'entity.parse.failed') return invalidRequest('request body is not valid JSON', { body: ['malformed JSON'] });
  if (e?.type === 'encoding.unsupported' || e?.type === 'charset.unsupported') {
    return new AppError('unsupported_media_type', 'unsupported body encoding');
  }
  // The router decodes each path parameter with decodeURIComponent and marks
  // the URIError 400 (without `expose`): "%FF", "%" or a cut-off "%E0%A4%A".
  if (err instanceof URIError && e.status === 400) {
    const segment = /^Failed to decode param '(.*)'$/s.exec(err.message)?.[1];
    const escape = segment === undefined ? undefined : firstBadEscape(segment);
    return invalidRequest('the path is not valid percent-encoded UTF-8', {
      path: [escape === undefined ? 'malformed percent-encoding' : `"${escape}" is not valid percent-encoded UTF-8`],
    });
  }
  if (e?.expose && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    return invalidRequest(String((err as Error).message));
  }
  return new AppError('internal_error', 'internal error');
}

/** Where the reference page explains an error code: its anchor on /docs. */
export function docsUrlOf(publicBaseUrl: string, code: ErrorCode): string {
  return `${publicBaseUrl}/docs#${code}`;
}

// An error answer is at most 8 KB, whatever was sent and whoever built its
// details. Validation names at most 20 fields (core/validation-messages.ts),
// each message a few hundred characters at most: the longest, an unknown
// field of an upload row with the 16 fields it accepts, is about 200. These
// limits are the backstop that holds for every error.
const MAX_ERROR_BODY_BYTES = 8192;
const MAX_FIELD_CHARS = 200;
const MAX_MESSAGE_CHARS = 500;
// Room kept for the line that says what was left out.
const LEFT_OUT_RESERVE_BYTES = 120;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value));

/**
 * The error envelope. Messages and details may quote what the client sent (a
 * path segment, a field's name); any key or secret in them is redacted as the
 * log redacts it, so no error answer carries a credential back. Redaction
 * comes before the cut, so no secret is shown in part: a field's name is cut
 * at MAX_FIELD_CHARS, a message at MAX_MESSAGE_CHARS, and from the first
 * message that would take the body past MAX_ERROR_BODY_BYTES on, the rest
 * are left out, counted under "_".
 */
export function errorBody(err: AppError, publicBaseUrl: string) {
  const details = Object.create(null) as ErrorDetails;
  const error = {
    code: err.code,
    message: clipped(redactSecrets(err.message), MAX_MESSAGE_CHARS),
    docsUrl: docsUrlOf(publicBaseUrl, err.code),
    details,
  };
  let budget = MAX_ERROR_BODY_BYTES - LEFT_OUT_RESERVE_BYTES - jsonBytes({ error });
  let leftOut = 0;
  for (const [field, messages] of Object.entries(err.details)) {
    if (leftOut) {
      leftOut += messages.length;
      continue;
    }
    const key = clipped(redactSecrets(field), MAX_FIELD_CHARS);
    for (let i = 0; i < messages.length; i++) {
      const shown = clipped(redactSecrets(messages[i]), MAX_MESSAGE_CHARS);
      // The key once with its colon, brackets and comma, then each message with its comma.
      const cost = (details[key] ? 0 : jsonBytes(key) + 4) + jsonBytes(shown) + 1;
      if (cost > budget) {
        leftOut += messages.length - i;
        break;
      }
      (details[key] ??= []).push(shown);
      budget -= cost;
    }
  }
  if (leftOut) (details._ ??= []).push(`${leftOut} more messages not shown; an error answer is at most ${MAX_ERROR_BODY_BYTES} bytes`);
  return { error };
}

export function errorMiddleware(publicBaseUrl: string, onInternal: (err: unknown, req: Parameters<RequestHandler>[0]) => void): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const appError = toAppError(err);
    // An AppError is an expected outcome, already in the request's log line as
    // its errorCode (a request shed while the database is down is one of many);
    // anything else is a fault, or the database failure behind a 503, and is logged whole.
    if (!(err instanceof AppError) && !(err instanceof ClientGoneError) && (appError.code === 'internal_error' || appError.code === 'overloaded'))
      onInternal(err, req);
    res.locals.errorCode = appError.code;
    if (res.headersSent) {
      // A streamed response failed midway: the status is gone, so cut the
      // connection rather than append an error to half a JSON document.
      res.destroy();
      return;
    }
    if (!req.complete) discardUnreadBody(req);
    res.status(appError.status).set(appError.headers).json(errorBody(appError, publicBaseUrl));
  };
}

// How long the rest of a refused request's body is read and dropped before the
// connection is cut: 40 MB arrive in well under a second over a fast link.
const UNREAD_BODY_GRACE_MS = 5_000;

/**
 * A request refused before its body was read to the end (an upload whose
 * third line is bad, say): the rest of the body is read and dropped, so the
 * client can finish sending and read the answer (a client still writing into
 * a closed connection sees a reset instead), and the connection then serves
 * its next request. A body still arriving after UNREAD_BODY_GRACE_MS has its
 * connection cut.
 */
function discardUnreadBody(req: Request): void {
  // A reader may have left a 'readable' listener (an async iterator does),
  // which keeps the stream paused whatever resume() asks.
  req.removeAllListeners('readable');
  req.removeAllListeners('data');
  const cut = setTimeout(() => req.socket?.destroy(), UNREAD_BODY_GRACE_MS);
  const settled = () => clearTimeout(cut);
  req.once('end', settled);
  req.once('close', settled);
  req.resume();
}

/** The path is not quoted: a client may have pasted a key or a password into it. */
export const routeNotFound: RequestHandler = (req) => {
  throw new AppError('not_found', `no route serves ${req.method} at this path`);
};
