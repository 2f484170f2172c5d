import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { Scope } from '../core/scopes.ts';
import type { AppError, ErrorCode } from '../core/errors.ts';
import type { Written } from './envelope.ts';
import type { FileSent } from './file-body.ts';

interface JsonResponse {
  status: 200 | 201 | 202;
  description: string;
  /** Headers the success answer carries, by name, with what they mean. */
  headers?: Record<string, string>;
}

/**
 * The `{ data, meta }` envelope, which the router writes from the handler's
 * `{ data, meta }`. Admin answers declare no `meta` and carry `data` only.
 */
export interface EnvelopeResponse extends JsonResponse {
  data: z.ZodType;
  meta?: z.ZodType;
  body?: never;
  csv?: never;
  validated?: never;
  file?: never;
}

/**
 * The whole success body, without the envelope: only for the one route the
 * spec exempts from it, the bulk implied-volatility read
 * (`{ instruments, assumptions }`). The router writes the handler's value.
 */
export interface BodyResponse extends JsonResponse {
  status: 200;
  body: z.ZodType;
  data?: never;
  meta?: never;
  csv?: never;
  validated?: never;
  file?: never;
}

interface FramedFields extends JsonResponse {
  status: 200;
  data: z.ZodType;
  meta: z.ZodType;
  body?: never;
  /** The route also answers Apache Arrow IPC streams and Parquet files (http/format.ts): what their columns hold. */
  columnar?: string;
  file?: never;
}

/**
 * An envelope the router cannot write from a value, so the handler writes it
 * through sendFramed or streamFramed (http/envelope.ts) and returns the
 * `Written` they return: an answer that also comes as CSV, or that carries an
 * ETag over its bytes. `data` and `meta` describe its JSON form.
 */
export type FramedResponse = FramedFields &
  (
    | {
        /** The route also answers in CSV (http/format.ts): what its rows hold. */
        csv: string;
        /** The answer carries an ETag, and If-None-Match naming it gets 304 (http/envelope.ts, sendFramed). */
        validated?: boolean;
      }
    | { csv?: string; validated: true }
  );

/**
 * Stored bytes (an export's file): the handler answers through sendFileBytes
 * (http/file-body.ts), with ranges, and returns the `FileSent` it returns.
 * `file` names each media type the bytes may have, with what it holds.
 */
export interface FileResponse {
  status: 200;
  description: string;
  headers?: Record<string, string>;
  file: Record<string, string>;
  data?: never;
  body?: never;
  meta?: never;
  csv?: never;
  validated?: never;
}

/** What a route of the API answers on success; its OpenAPI document says the same. */
export type ApiResponse = EnvelopeResponse | BodyResponse | FramedResponse | FileResponse;

/** An HTML page (the dashboard's): the handler returns the page, sent as text/html. */
export interface PageResponse {
  status: 200 | 201;
  html: true;
  redirect?: never;
}

/** A redirect to another page (a form post answered by post, redirect, get): the handler returns its `location`. */
export interface RedirectResponse {
  status: 303;
  redirect: true;
  html?: never;
}

export type PageOrRedirect = PageResponse | RedirectResponse;

/**
 * The shape of a value of type T: its fields, their nesting, which may be
 * null or absent, and the kind of each value, with literal types widened to
 * their kind (`'split' | 'merger'` to string). Several services build
 * enumerated fields as plain strings, so the exact values are held to the
 * schemas at run time instead: every answer in the integration tests is
 * validated against the OpenAPI document (test/support/contract.ts).
 */
export type Shape<T> = T extends string
  ? string
  : T extends number
    ? number
    : T extends boolean
      ? boolean
      : T extends null | undefined
        ? T
        : T extends readonly (infer U)[]
          ? Shape<U>[]
          : T extends object
            ? { [K in keyof T]: Shape<T[K]> }
            : T;

/**
 * What the handler of a route declaring `R` returns, and the router sends
 * with R's status: its `data` and `meta` (or its `body`) in the shape R's
 * schemas output, the `Written` of an answer the handler wrote itself, a
 * page's HTML, or where a redirect goes. A handler returning anything else
 * does not compile.
 */
export type Reply<R> = R extends { file: Record<string, string> }
  ? FileSent
  : R extends { body: infer S extends z.ZodType }
    ? Shape<z.output<S>>
    : R extends { csv: string } | { validated: true }
      ? Written
      : R extends { html: true }
        ? string
        : R extends { redirect: true }
          ? { location: string }
          : R extends { data: infer D extends z.ZodType; meta: infer M extends z.ZodType }
            ? { data: Shape<z.output<D>>; meta: Shape<z.output<M>> }
            : R extends { data: infer D extends z.ZodType }
              ? { data: Shape<z.output<D>> }
              : never;

/** What the router needs of any route: the request it takes, parsed before the handler runs, and what it answers. */
interface Route<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType, R> {
  method: 'get' | 'post' | 'delete';
  /** Express syntax (`/instruments/:id`), relative to the table's prefix (/v1, /admin/v1, /account). */
  path: string;
  params?: P;
  query?: Q;
  /** A body, parsed and validated before the handler runs: JSON for the API, a form for the dashboard. */
  body?: B;
  response: R;
}

/**
 * A route as the API declares it: everything the OpenAPI document says about
 * it, and everything the router needs to parse its input and send its
 * answer. A handler can only be attached to one of these (see
 * http/router.ts), so a route cannot be served without its schemas, and the
 * document is generated from the same objects the router mounts.
 */
export interface RouteDefinition<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  R extends ApiResponse = ApiResponse,
> extends Route<P, Q, B, R> {
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** The one scope a public route requires; admin routes are behind the admin token instead. */
  scope?: Scope;
  /** Every route declares its query, `NoQuerySchema` when it takes none, so an unknown parameter is refused. */
  query: Q;
  /** An upload read by the handler itself: each record is validated against `rows` (admin ingest). */
  upload?: { rows: z.ZodType; description: string };
  /** A public route that also serves a link signed for it (`?expires=…&signature=…`) without an API key: the handler checks the signature. */
  signedLinks?: true;
  /** The error codes this route answers beyond those every route of its listener can (see http/openapi.ts). */
  errors: ErrorCode[];
}

/**
 * A page or form of the account dashboard: HTML or a redirect, described by
 * no OpenAPI document. A page without a `query` schema does not parse its
 * query string, whatever a browser or a link adds to it.
 */
export type PageDefinition<
  P extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodType,
  R extends PageOrRedirect = PageOrRedirect,
> = Route<P, Q, B, R>;

export type AnyRoute = RouteDefinition | PageDefinition;

export interface RouteInput<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> {
  params: z.output<P>;
  query: z.output<Q>;
  body: z.output<B>;
}

type Declared<S> = S extends z.ZodType ? S : z.ZodNever;

/** The parsed input of route `E`: `never` for a part it does not declare. */
export type InputOf<E extends AnyRoute> = RouteInput<Declared<E['params']>, Declared<E['query']>, Declared<E['body']>>;

/** The handler of route `E`: it gets the parsed input and returns what the router sends (Reply). */
export type HandlerOf<E extends AnyRoute> = (input: InputOf<E>, res: Response, req: Request) => Reply<E['response']> | Promise<Reply<E['response']>>;

/**
 * A refusal shown on the page it concerns rather than on the generic error
 * page: the HTML for `error`, raised while parsing the input (then `input`
 * is undefined) or by the handler. The router sends it with the error's
 * status and headers; to decline, it throws.
 */
export type Refusal<E extends AnyRoute> = (error: AppError, input: InputOf<E> | undefined, req: Request, res: Response) => string | Promise<string>;

/** Declares a route of the API (the identity function, there for type inference). */
export function defineRoute<
  P extends z.ZodType = z.ZodNever,
  Q extends z.ZodType = z.ZodType,
  B extends z.ZodType = z.ZodNever,
  R extends ApiResponse = ApiResponse,
>(definition: RouteDefinition<P, Q, B, R>): RouteDefinition<P, Q, B, R> {
  return definition;
}

/** Declares a page or form of the dashboard (the identity function, there for type inference). */
export function definePage<
  P extends z.ZodType = z.ZodNever,
  Q extends z.ZodType = z.ZodNever,
  B extends z.ZodType = z.ZodNever,
  R extends PageOrRedirect = PageOrRedirect,
>(definition: PageDefinition<P, Q, B, R>): PageDefinition<P, Q, B, R> {
  return definition;
}

/** `/instruments/:id` → `/instruments/{id}` */
export function openApiPath(prefix: string, path: string): string {
  return prefix + path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}
