import type { RequestHandler } from 'express';
import { authFailures } from '../observability/metrics.ts';
import type { Admissions } from '../keys/admission.ts';
import { authorize, type AuthContext, type LastUsedRecorder } from '../keys/service.ts';
import type { Scope } from '../keys/scopes.ts';
import { AppError } from '../core/errors.ts';

export interface AuthDeps {
  admissions: Admissions;
  lastUsed: LastUsedRecorder;
}

/** Middleware that admits a request only with an active key holding exactly `scope`. */
export function requireScope(deps: AuthDeps, scope: Scope): RequestHandler {
  return async (req, res, next) => {
    let auth: AuthContext;
    try {
      auth = await authorize(deps.admissions, req.headers.authorization, scope);
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
