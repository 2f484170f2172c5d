import type { AuthContext } from '../core/auth-context.ts';
import type { ErrorCode } from '../core/errors.ts';
import type { Session } from '../core/session.ts';

/**
 * What a request's middleware leaves in `res.locals` for what runs after it:
 * the one declaration of every key read or written there.
 */
declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- the merge point @types/express gives for Locals
  namespace Express {
    interface Locals {
      /** The request's id, set first by observeRequests (http/observe.ts) on both listeners. */
      requestId: string;
      /** The mount point of the route table that took the request (/v1, /admin/v1, /account), for the route's label in logs and metrics. */
      routePrefix?: string;
      /** The label of a mount that serves paths without an Express route (static assets), set by servedAs (http/observe.ts). */
      servedAs?: string;
      /** The code of the error answered, for the request's log line. */
      errorCode?: ErrorCode;
      /** The key a public route's scope check admitted (http/auth.ts). */
      auth?: AuthContext;
      /** The dashboard's signed-in session, once its session check passed (dashboard/routes.ts). */
      session?: Session;
    }
  }
}
