import type { ErrorRequestHandler, RequestHandler } from 'express';
import { z } from 'zod';

export type ErrorCode =
  | 'invalid_request'
  | 'missing_api_key'
  | 'invalid_api_key'
  | 'revoked_api_key'
  | 'insufficient_scope'
  | 'not_found'
  | 'options_unavailable'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'unsupported_structure'
  | 'rate_limited'
  | 'upstream_unavailable'
  | 'overloaded'
  | 'internal_error';

const STATUS: Record<ErrorCode, number> = {
  invalid_request: 400,
  missing_api_key: 401,
  invalid_api_key: 401,
  revoked_api_key: 401,
  insufficient_scope: 403,
  not_found: 404,
  options_unavailable: 404,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unsupported_structure: 422,
  rate_limited: 429,
  upstream_unavailable: 503,
  overloaded: 503,
  internal_error: 500,
};

export type ErrorDetails = Record<string, string[]>;

/** The one error type: an operational failure with its code, status and field details. */
export class AppError extends Error {
  readonly status: number;
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details: ErrorDetails = {},
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
    this.status = STATUS[code];
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);

export function invalidRequest(message: string, details: ErrorDetails = {}) {
  return new AppError('invalid_request', message, details);
}

/** zod issues → `details`, keyed by the dotted field path ("_" for the whole input). */
export function zodDetails(error: z.ZodError, prefix = ''): ErrorDetails {
  const details: ErrorDetails = {};
  for (const issue of error.issues) {
    const key = [prefix, ...issue.path.map(String)].filter(Boolean).join('.') || '_';
    (details[key] ??= []).push(issue.message);
  }
  return details;
}

// Connection-level failures mean the database is unreachable or shutting down:
// the request is shed with 503 rather than reported as a bug.
const DATABASE_UNAVAILABLE = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN',
  'CONNECTION_CLOSED', 'CONNECTION_ENDED', 'CONNECTION_DESTROYED', 'CONNECT_TIMEOUT',
  '57P01', '57P02', '57P03', '53300', '08000', '08001', '08003', '08004', '08006',
]);

export function isDatabaseUnavailable(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code === 'string' && DATABASE_UNAVAILABLE.has(code);
}

export function toAppError(err: unknown): AppError {
  if (err instanceof AppError) return err;
  if (err instanceof z.ZodError) return invalidRequest('request validation failed', zodDetails(err));
  if (isDatabaseUnavailable(err)) {
    return new AppError('overloaded', 'the database is unavailable; retry shortly', {}, { 'Retry-After': '2' });
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
    return invalidRequest('the path is not valid percent-encoded UTF-8', {
      path: [segment === undefined ? 'malformed percent-encoding' : `segment "${segment}" is not valid percent-encoded UTF-8`],
    });
  }
  if (e?.expose && typeof e.status === 'number' && e.status >= 400 && e.status < 500) {
    return invalidRequest(String((err as Error).message));
  }
  return new AppError('internal_error', 'internal error');
}

export function errorBody(err: AppError, docsBaseUrl: string) {
  return {
    error: {
      code: err.code,
      message: err.message,
      docsUrl: `${docsBaseUrl}#${err.code}`,
      details: err.details,
    },
  };
}

export function errorMiddleware(docsBaseUrl: string, onInternal: (err: unknown, req: Parameters<RequestHandler>[0]) => void): ErrorRequestHandler {
  return (err, req, res, _next) => {
    const appError = toAppError(err);
    if (appError.code === 'internal_error' || appError.code === 'overloaded') onInternal(err, req);
    res.locals.errorCode = appError.code;
    if (res.headersSent) {
      // A streamed response failed midway: the status is gone, so cut the
      // connection rather than append an error to half a JSON document.
      res.destroy();
      return;
    }
    res.status(appError.status).set(appError.headers).json(errorBody(appError, docsBaseUrl));
  };
}

export const routeNotFound: RequestHandler = (req) => {
  throw new AppError('not_found', `no route for ${req.method} ${req.path}`);
};
