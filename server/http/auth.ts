import type { RequestHandler } from 'express';
import { authFailures } from '../observability/metrics.ts';
import type { AuthContext } from '../core/auth-context.ts';
import { AppError } from '../core/errors.ts';
import type { Scope } from '../core/scopes.ts';

/** What the scope check needs from the keys area (keys/service.ts), given by the wiring. */
export interface AuthDeps {
  /** Resolves the request's Authorization header, checks the scope and admits it against the key's windows; throws the AppError to answer. */
  authorize(authorization: string | undefined, scope: Scope): Promise<AuthContext>;
  /** Notes the key's use, written later in batches. */
  lastUsed: { record(keyId: string): void };
}

/** Middleware that admits a request only with an active key holding exactly `scope`. */
export function requireScope(deps: AuthDeps, scope: Scope): RequestHandler {
  return async (req, res, next) => {
    let auth: AuthContext;
    try {
      auth = await deps.authorize(req.headers.authorization, scope);
    } catch (err) {
      if (err instanceof AppError) authFailures.inc({ code: err.code });
      throw err;
    }
    res.locals.auth = auth;
    deps.lastUsed.record(auth.keyId);
    res.setHeader('RateLimit-Limit', String(auth.rateLimit.limit));
    res.setHeader('RateLimit-Remaining', String(auth.rateLimit.remaining));
    res.setHeader('RateLimit-Reset', String(auth.rateLimit.resetSeconds));
    next();
  };
}
