import type { Request, Response } from 'express';
import type { z } from 'zod';
import type { Scope } from '../keys/scopes.ts';
import type { ErrorCode } from '../core/errors.ts';

/**
 * A route as the API declares it: everything the OpenAPI document says about
 * it, and everything the router needs to parse its input. A handler can only
 * be attached to one of these (see http/router.ts), so a route cannot be
 * served without its schemas, and the document is generated from the same
 * objects the router mounts.
 */
export interface RouteDefinition<P extends z.ZodType = z.ZodType, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodType> {
  method: 'get' | 'post';
  /** Express syntax (`/instruments/:id`), relative to the listener's prefix (/v1, /admin/v1). */
  path: string;
  operationId: string;
  tag: string;
  summary: string;
  description?: string;
  /** The one scope a public route requires; admin routes are behind the admin token instead. */
  scope?: Scope;
  params?: P;
  /** Every route declares its query, `NoQuerySchema` when it takes none, so an unknown parameter is refused. */
  query: Q;
  /** A JSON body, parsed and validated before the handler runs. */
  body?: B;
  /** An upload read by the handler itself: each record is validated against `rows` (admin ingest). */
  upload?: { rows: z.ZodType; description: string };
  response: {
    status: 200 | 201;
    description: string;
    /** Headers the success answer carries, by name, with what they mean. */
    headers?: Record<string, string>;
    /** The route also answers in CSV (http/format.ts): what its rows hold. */
    csv?: string;
    /** The answer carries an ETag, and If-None-Match naming it gets 304 (http/envelope.ts, sendFramed). */
    validated?: boolean;
  } & (
    | {
        data: z.ZodType;
        /** The public envelope's meta; admin answers carry `data` only. */
        meta?: z.ZodType;
        body?: never;
      }
    | {
        /**
         * The whole success body, without the `{ data, meta }` envelope: only
         * for the one route the spec exempts from it, the bulk
         * implied-volatility read (`{ instruments, assumptions }`).
         */
        body: z.ZodType;
        data?: never;
        meta?: never;
      }
  );
  /** The error codes this route answers beyond those every route of its listener can (see http/openapi.ts). */
  errors: ErrorCode[];
}

export interface RouteInput<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> {
  params: z.output<P>;
  query: z.output<Q>;
  body: z.output<B>;
}

export type RouteHandler<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType> = (
  input: RouteInput<P, Q, B>,
  res: Response,
  req: Request,
) => Promise<void> | void;

/** Declares a route (the identity function, there for type inference). */
export function defineRoute<P extends z.ZodType = z.ZodNever, Q extends z.ZodType = z.ZodType, B extends z.ZodType = z.ZodNever>(
  definition: RouteDefinition<P, Q, B>,
): RouteDefinition<P, Q, B> {
  return definition;
}

/** `/instruments/:id` → `/instruments/{id}` */
export function openApiPath(prefix: string, path: string): string {
  return prefix + path.replace(/:([A-Za-z0-9_]+)/g, '{$1}');
}
