import express, { type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { requireScope, type AuthDeps } from './auth.ts';
import { isWritten } from './envelope.ts';
import { isFileSent } from './file-body.ts';
import { requireUtf8Body } from './media-type.ts';
import { routePrefix } from './observe.ts';
import type { AnyRoute, HandlerOf, InputOf, Refusal, RouteDefinition } from './route.ts';
import { AppError } from '../core/errors.ts';
import { parse, refuseOversizedJson } from '../core/validate.ts';
import type { Meta } from '../core/meta.ts';
import type { PointInTime } from '../core/time.ts';
import { readsAsOf, servedAsOf } from '../db/read-scope.ts';

const requireJson: RequestHandler = (req, _res, next) => {
  if (!req.is('application/json')) {
    throw new AppError('unsupported_media_type', 'send the body as application/json', {
      'content-type': [`unsupported: ${req.get('content-type') ?? '(none)'}`],
    });
  }
  next();
};

interface Entry<D extends AnyRoute> {
  definition: D;
  /** Parses the input, runs the handler and sends what it returns. */
  serve: RequestHandler;
}

/**
 * Express paths ordered most specific first, segment by segment: a literal
 * segment before a parameter, so `/instruments/bulk` is matched before
 * `/instruments/:id` whatever order the areas declare them in.
 */
export function bySpecificity(a: string, b: string): number {
  const as = a.split('/');
  const bs = b.split('/');
  for (let i = 0; i < Math.min(as.length, bs.length); i++) {
    const aParam = as[i].startsWith(':');
    const bParam = bs[i].startsWith(':');
    if (aParam !== bParam) return aParam ? 1 : -1;
    if (as[i] !== bs[i]) return as[i] < bs[i] ? -1 : 1;
  }
  return as.length - bs.length;
}

export interface RouterOptions<D extends AnyRoute> {
  /** Mount point, for metric labels and messages: /v1, /admin/v1 or /account. */
  prefix: string;
  /** What a route needs before its input is parsed: authorization, a CSRF check, body parsing. */
  before(definition: D): RequestHandler[];
  /**
   * A method a path does not serve: answered 405 with `Allow` (OPTIONS: 204
   * with `Allow`), or passed on to whatever follows the table. The default
   * is to answer.
   */
  otherMethods?: 'answer' | 'pass';
}

/**
 * A listener's routes, or the dashboard's pages. A handler can only be
 * attached to a declared route, whose schemas parse the input before the
 * handler runs, and whose response says how the handler's value is sent
 * (Reply in http/route.ts): the envelope or the body as JSON with the
 * declared status, a page as HTML, a redirect with its Location; a handler
 * that writes its answer itself must return the `Written` of the function
 * that wrote it (http/envelope.ts). `build` mounts
 * exactly the routes declared: one missing or one extra stops the process at
 * start.
 */
export class RouteTable<D extends AnyRoute = RouteDefinition> {
  private readonly entries: Entry<D>[] = [];

  private readonly options: RouterOptions<D>;

  constructor(options: RouterOptions<D>) {
    this.options = options;
  }

  /** Attaches `handler` to `definition`; a page route may show its refusals on a page of its own (`refusal`). */
  handle<E extends D>(definition: E, handler: HandlerOf<E>, ...refusal: E['response'] extends { html: true } | { redirect: true } ? [Refusal<E>?] : []): void {
    this.entries.push({ definition, serve: serve(definition, handler, refusal[0]) });
  }

  /**
   * Mounts the declared routes on `router`, a new one unless given: the
   * dashboard mounts its two tables on its own router, either side of its
   * session check, so that a request no page takes goes on to that check and
   * the 404 page (a nested router would answer an OPTIONS request itself,
   * with the methods its paths serve).
   */
  build(declared: readonly D[], router = express.Router({ strict: true })): express.Router {
    const handled = new Set(this.entries.map((e) => e.definition));
    const unhandled = declared.filter((d) => !handled.has(d)).map((d) => `${d.method.toUpperCase()} ${d.path}`);
    const undeclared = this.entries.filter((e) => !declared.includes(e.definition)).map((e) => `${e.definition.method.toUpperCase()} ${e.definition.path}`);
    if (unhandled.length || undeclared.length) {
      throw new Error(
        `${this.options.prefix}: routes declared without a handler: [${unhandled.join(', ')}]; handled but not declared: [${undeclared.join(', ')}]`,
      );
    }
    router.use(routePrefix(this.options.prefix));
    const byPath = new Map<string, Entry<D>[]>();
    for (const entry of this.entries) byPath.set(entry.definition.path, [...(byPath.get(entry.definition.path) ?? []), entry]);
    // Most specific first, so `/instruments/implied-volatility` is never read as an instrument id.
    for (const [path, entries] of [...byPath].sort(([a], [b]) => bySpecificity(a, b))) {
      for (const { definition, serve } of entries) router[definition.method](path, ...this.options.before(definition), serve);
      if (this.options.otherMethods !== 'pass') {
        router.all(
          path,
          methodNotAllowed(
            path,
            entries.map((e) => e.definition.method.toUpperCase()),
          ),
        );
      }
    }
    return router;
  }
}

function serve<E extends AnyRoute>(definition: E, handler: HandlerOf<E>, refusal: Refusal<E> | undefined): RequestHandler {
  const send = sender(definition);
  return async (req: Request, res: Response) => {
    let input: InputOf<E> | undefined;
    let reply: unknown;
    try {
      input = parseInput(definition, req, res);
      const asOf = (input.query as { asOf?: Partial<PointInTime> } | undefined)?.asOf;
      if (asOf?.instant instanceof Date) readsAsOf(asOf.instant);
      reply = await handler(input, res, req);
    } catch (err) {
      if (!refusal || !(err instanceof AppError)) throw err;
      const page = await refusal(err, input, req, res);
      res.locals.errorCode = err.code;
      res.status(err.status).set(err.headers).type('html').send(page);
      return;
    }
    send(res, reply);
  };
}

function parseInput<E extends AnyRoute>(definition: E, req: Request, res: Response): InputOf<E> {
  const params = definition.params ? parse(definition.params, req.params, 'params') : {};
  const query = definition.query ? parse(definition.query, req.query) : undefined;
  const body = definition.body ? parse(definition.body, req.body, 'body', res.locals.bodySizesChecked === true) : undefined;
  // Each part is the output of the schema InputOf names (or absent where that is `never`).
  return { params, query, body } as InputOf<E>;
}

/**
 * How a route's answer is sent, decided once from its declared response.
 * The handler's type (HandlerOf, from Reply) fixes the value's shape; the
 * router checks only what a type cannot: who wrote the answer.
 */
function sender(definition: AnyRoute): (res: Response, reply: unknown) => void {
  const { response } = definition;
  const route = `${definition.method.toUpperCase()} ${definition.path}`;
  const unwritten = (res: Response) => {
    if (res.headersSent) throw new Error(`${route}: the handler wrote the answer itself, which its declared response leaves to the router`);
  };
  if ('html' in response && response.html) {
    return (res, page) => {
      unwritten(res);
      res.status(response.status).type('html').send(page);
    };
  }
  if ('redirect' in response && response.redirect) {
    return (res, reply) => {
      unwritten(res);
      res.redirect(response.status, (reply as { location: string }).location);
    };
  }
  if (response.body) {
    return (res, body) => {
      unwritten(res);
      res.status(response.status).json(body);
    };
  }
  if (response.file) {
    return (_res, reply) => {
      if (!isFileSent(reply)) throw new Error(`${route}: the handler returned without answering through sendFileBytes`);
    };
  }
  if (response.csv !== undefined || response.validated) {
    return (_res, reply) => {
      if (!isWritten(reply)) throw new Error(`${route}: the handler returned without writing its answer through sendFramed or streamFramed`);
    };
  }
  const { meta } = response;
  return (res, reply) => {
    unwritten(res);
    const envelope = reply as { data: unknown; meta: Meta };
    // meta.asOf is the instant the answer holds: earlier than the service's reading time when a replica behind the primary served it (db/read-scope.ts).
    const body = meta ? { data: envelope.data, meta: { ...envelope.meta, asOf: servedAsOf(envelope.meta.asOf) } } : { data: envelope.data };
    res.status(response.status).json(body);
  };
}

/** Names the route's template, not the path as sent: a path parameter may hold whatever a client pasted. */
function methodNotAllowed(path: string, methods: string[]): RequestHandler {
  const allow = [...new Set(methods.includes('GET') ? [...methods, 'HEAD'] : methods), 'OPTIONS'].join(', ');
  return (req, res) => {
    if (req.method === 'OPTIONS') {
      res.setHeader('Allow', allow);
      res.status(204).end();
      return;
    }
    throw new AppError('method_not_allowed', `${req.method} is not allowed on ${res.locals.routePrefix ?? ''}${path}; allowed: ${allow}`, {}, { Allow: allow });
  };
}

/**
 * The JSON body reader of a route whose body `schema` parses: a body over a
 * size the schema sets (an object of far more fields than it declares, a
 * list over its bound) is refused from its bytes, once read and inflated,
 * before JSON.parse builds it (core/json-shape.ts).
 */
function jsonBody(schema: z.ZodType, limit: string): RequestHandler {
  return express.json({
    limit,
    strict: true,
    verify: (_req, res, bytes) => {
      refuseOversizedJson(schema, bytes);
      // parse need not walk the parsed body for the same sizes again.
      (res as Response).locals.bodySizesChecked = true;
    },
  });
}

/** The /v1 router: each route requires its one scope, checked before any body is read or parsed. */
export function publicRoutes(auth: AuthDeps, bodyLimit: string): RouteTable {
  return new RouteTable({
    prefix: '/v1',
    before(definition) {
      if (!definition.scope) throw new Error(`public route ${definition.path} declares no scope`);
      const scoped = requireScope(auth, definition.scope);
      // A signed link (a query with signature) is checked by the route's handler instead of a key.
      const auth_: RequestHandler = definition.signedLinks ? (req, res, next) => (req.query.signature !== undefined ? next() : scoped(req, res, next)) : scoped;
      return definition.body ? [auth_, requireJson, requireUtf8Body, jsonBody(definition.body, bodyLimit)] : [auth_];
    },
  });
}

/** The /admin/v1 router (the admin token is checked in front of it). */
export function adminRoutes(bodyLimit: string): RouteTable {
  return new RouteTable({
    prefix: '/admin/v1',
    before: (definition) => (definition.body ? [requireUtf8Body, jsonBody(definition.body, bodyLimit)] : []),
  });
}
