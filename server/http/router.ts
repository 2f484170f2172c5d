import express, { type Request, type RequestHandler, type Response } from 'express';
import type { z } from 'zod';
import { requireScope, type AuthDeps } from './auth.ts';
import { requireUtf8Body } from './media-type.ts';
import { routePrefix } from './observe.ts';
import type { RouteDefinition, RouteHandler } from './route.ts';
import { AppError } from '../core/errors.ts';
import { parse } from '../core/validate.ts';

const requireJson: RequestHandler = (req, _res, next) => {
  if (!req.is('application/json')) {
    throw new AppError('unsupported_media_type', 'send the body as application/json', {
      'content-type': [`unsupported: ${req.get('content-type') ?? '(none)'}`],
    });
  }
  next();
};

interface Entry {
  definition: RouteDefinition;
  handler: RouteHandler<z.ZodType, z.ZodType, z.ZodType>;
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

export interface RouterOptions {
  /** Mount point, for metric labels and messages: /v1 or /admin/v1. */
  prefix: string;
  /** Authorization and body parsing a route needs before its input is parsed. */
  before(definition: RouteDefinition): RequestHandler[];
}

/**
 * A listener's routes. A handler can only be attached to a RouteDefinition,
 * whose schemas parse the input before the handler runs, and `build` mounts
 * exactly the routes declared: one missing or one extra stops the process at
 * start. Each path also answers 405 with `Allow` to the methods it lacks.
 */
export class RouteTable {
  private readonly entries: Entry[] = [];

  private readonly options: RouterOptions;

  constructor(options: RouterOptions) {
    this.options = options;
  }

  handle<P extends z.ZodType, Q extends z.ZodType, B extends z.ZodType>(definition: RouteDefinition<P, Q, B>, handler: RouteHandler<P, Q, B>): void {
    this.entries.push({ definition, handler } as unknown as Entry);
  }

  build(declared: readonly RouteDefinition[]): express.Router {
    const handled = new Set(this.entries.map((e) => e.definition));
    const unhandled = declared.filter((d) => !handled.has(d)).map((d) => `${d.method.toUpperCase()} ${d.path}`);
    const undeclared = this.entries.filter((e) => !declared.includes(e.definition)).map((e) => `${e.definition.method.toUpperCase()} ${e.definition.path}`);
    if (unhandled.length || undeclared.length) {
      throw new Error(
        `${this.options.prefix}: routes declared without a handler: [${unhandled.join(', ')}]; handled but not declared: [${undeclared.join(', ')}]`,
      );
    }
    const router = express.Router({ strict: true });
    router.use(routePrefix(this.options.prefix));
    const byPath = new Map<string, Entry[]>();
    for (const entry of this.entries) byPath.set(entry.definition.path, [...(byPath.get(entry.definition.path) ?? []), entry]);
    // Most specific first, so `/instruments/implied-volatility` is never read as an instrument id.
    for (const [path, entries] of [...byPath].sort(([a], [b]) => bySpecificity(a, b))) {
      for (const { definition, handler } of entries) {
        router[definition.method](path, ...this.options.before(definition), inputParser(definition, handler));
      }
      router.all(
        path,
        methodNotAllowed(
          path,
          entries.map((e) => e.definition.method.toUpperCase()),
        ),
      );
    }
    return router;
  }
}

function inputParser(definition: RouteDefinition, handler: Entry['handler']): RequestHandler {
  return async (req: Request, res: Response) => {
    const params = definition.params ? parse(definition.params, req.params, 'params') : {};
    const query = parse(definition.query, req.query);
    const body = definition.body ? parse(definition.body, req.body, 'body') : undefined;
    await handler({ params, query, body }, res, req);
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

/** The /v1 router: each route requires its one scope, checked before any body is read or parsed. */
export function publicRoutes(auth: AuthDeps, bodyLimit: string): RouteTable {
  const json = express.json({ limit: bodyLimit, strict: true });
  return new RouteTable({
    prefix: '/v1',
    before(definition) {
      if (!definition.scope) throw new Error(`public route ${definition.path} declares no scope`);
      const auth_ = requireScope(auth, definition.scope);
      return definition.body ? [auth_, requireJson, requireUtf8Body, json] : [auth_];
    },
  });
}

/** The /admin/v1 router (the admin token is checked in front of it). */
export function adminRoutes(bodyLimit: string): RouteTable {
  const json = express.json({ limit: bodyLimit });
  return new RouteTable({
    prefix: '/admin/v1',
    before: (definition) => (definition.body ? [requireUtf8Body, json] : []),
  });
}
