import { z } from 'zod';

/**
 * Every error code with its HTTP status and what it means; the reference page
 * (/docs) shows this table, and each answer's `docsUrl` points at its row.
 */
export const ERRORS = {
  invalid_request: [400, 'a parameter, path segment or body field is missing or invalid; `details` names each'],
  missing_api_key: [401, 'no `Authorization: Bearer <key>` header, or one that cannot be parsed'],
  invalid_api_key: [401, 'the key (or admin token) is not recognised'],
  revoked_api_key: [401, 'the key was revoked'],
  invalid_credentials: [401, 'dashboard sign-in: the login or the password is wrong'],
  insufficient_scope: [403, "the key lacks the route's scope"],
  invalid_signature: [403, "an export file's signed link does not verify, or has expired; the job's manifest gives a fresh one"],
  invalid_csrf_token: [403, "dashboard: a state-changing request without its session's CSRF token, or from another origin"],
  not_found: [404, 'the instrument, contract, date or route does not exist'],
  options_unavailable: [404, 'no options are served for the instrument'],
  method_not_allowed: [405, 'the path does not serve the method; `Allow` lists those it does'],
  request_timeout: [408, 'the request did not arrive in time'],
  payload_too_large: [413, 'the body, or one of its records, is over the limit'],
  unsupported_media_type: [415, 'the body is not in a content type the route reads'],
  range_not_satisfiable: [416, 'the Range asks for bytes past the end of the file; `Content-Range: bytes */<size>` gives its size'],
  unsupported_structure: [422, 'the option structure is not one the strategy EV can price'],
  rate_limited: [
    429,
    "the key's account is over a request window or its concurrent-stream limit, or dashboard sign-in attempts are over theirs; wait `Retry-After` seconds",
  ],
  request_header_too_large: [431, 'the request headers are over the limit'],
  internal_error: [500, 'a fault in the service; the request id finds it in the log'],
  upstream_unavailable: [503, 'the outside provider (FRED) has no key configured or did not answer, and nothing stored can stand in'],
  overloaded: [
    503,
    'the service is shedding load (database unreachable or too slow to answer, worker pool or stream slots busy, or starting); wait `Retry-After` seconds',
  ],
} as const satisfies Record<string, readonly [number, string]>;

export type ErrorCode = keyof typeof ERRORS;

export const ERROR_CODES = Object.keys(ERRORS) as ErrorCode[];

export const STATUS = Object.fromEntries(ERROR_CODES.map((code) => [code, ERRORS[code][0]])) as Record<ErrorCode, number>;

export type ErrorDetails = Record<string, string[]>;

/** The one error type: an operational failure with its code, status and field details. */
export class AppError extends Error {
  readonly status: number;
  readonly code: ErrorCode;
  readonly details: ErrorDetails;
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}, headers: Record<string, string> = {}) {
    super(message);
    this.code = code;
    this.details = details;
    this.headers = headers;
    this.status = STATUS[code];
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} not found`);

export function invalidRequest(message: string, details: ErrorDetails = {}) {
  return new AppError('invalid_request', message, details);
}

/** zod issues → `details`, keyed by the dotted field path ("_" for the whole input). */
export function zodDetails(error: z.ZodError, prefix = ''): ErrorDetails {
  // No prototype: an unknown field named "constructor" or "__proto__" is a key like any other.
  const details = Object.create(null) as ErrorDetails;
  for (const issue of error.issues) {
    const key = [prefix, ...issue.path.map(String)].filter(Boolean).join('.') || '_';
    (details[key] ??= []).push(issue.message);
  }
  return details;
}

/**
 * The code an error carries, when it carries one as a string: PostgreSQL's
 * SQLSTATE on a postgres.js PostgresError ('23505'), postgres.js's own
 * ('CONNECTION_ENDED'), Node's ('ECONNREFUSED', zlib's 'Z_DATA_ERROR'), or an
 * AppError's; else undefined.
 */
export function errorCode(err: unknown): string | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  return typeof err.code === 'string' ? err.code : undefined;
}
