import type { Environment } from './scopes.ts';

/**
 * The API key a public request was admitted with (keys/service.ts authorize,
 * through http/auth.ts), and its rate-limit window at admission: what
 * the handlers after the scope check read from `res.locals.auth`.
 */
export interface AuthContext {
  keyId: string;
  accountId: string;
  environment: Environment;
  rateLimit: { limit: number; remaining: number; resetSeconds: number };
}
