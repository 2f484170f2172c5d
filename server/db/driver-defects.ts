import { errorCode } from '../core/errors.ts';
import type { Logger } from '../observability/logger.ts';

let installed = false;

/**
 * postgres.js 3.4.9 starts every new connection with a query for the array
 * types (fetch_types) whose promise nothing awaits: when the server goes away
 * or cancels it in that moment, the rejection is unhandled, and Node's default
 * for an unhandled rejection ends the process (porsager/postgres#1192, #1205,
 * #1223, open). A replica killed while a pool opens a connection to it did so
 * here. That rejection, and only it, is logged instead: the connection is
 * gone either way and the query that wanted it fails on its own terms (a
 * connection failure, which the gates and the replica router handle). Every
 * other unhandled rejection still ends the process, as without this.
 */
export function survivePostgresTypesFetchFailures(logger: Logger): void {
  if (installed) return;
  installed = true;
  process.on('unhandledRejection', (reason) => {
    const query = (reason as { query?: unknown })?.query;
    if (typeof query === 'string' && query.includes('from pg_catalog.pg_type a') && query.includes("a.typcategory = 'A'")) {
      logger.warn(
        { code: errorCode(reason), reason: reason instanceof Error ? reason.message : undefined },
        "a new database connection failed while postgres.js read the server's array types",
      );
      return;
    }
    throw reason;
  });
}
