import express, { type Request, type RequestHandler, type Response } from 'express';
import { AppError } from './errors.ts';
import type { Scope } from '../keys/scopes.ts';
import { requireScope, type AuthDeps } from './auth.ts';
import { routePrefix } from './observe.ts';

type Handler = (req: Request, res: Response) => Promise<void> | void;

const requireJson: RequestHandler = (req, _res, next) => {
  if (!req.is('application/json')) {
    throw new AppError('unsupported_media_type', 'send the body as application/json', {
      'content-type': [`unsupported: ${req.get('content-type') ?? '(none)'}`],
    });
  }
  next();
};

/**
 * The /v1 router. Every route names exactly one scope; the scope check runs
 * before the body is parsed, so an unauthorised caller costs no parsing work.
 */
export function createPublicRouter(auth: AuthDeps, bodyLimit: string) {
  const router = express.Router({ strict: true });
  router.use(routePrefix('/v1'));
  const json = express.json({ limit: bodyLimit, strict: true });
  return {
    router,
    get(path: string, scope: Scope, handler: Handler) {
      router.get(path, requireScope(auth, scope), handler);
    },
    post(path: string, scope: Scope, handler: Handler) {
      router.post(path, requireScope(auth, scope), requireJson, json, handler);
    },
  };
}

export type PublicRouter = ReturnType<typeof createPublicRouter>;
