import type { Config } from '../config.ts';
import type { Database, Reads } from '../db/database.ts';
import type { Logger } from '../observability/logger.ts';
import type { WorkerPool } from '../../workers/pool.ts';
import type { IngestKind } from '../ingest/kind.ts';
import type { RouteDefinition } from '../http/route.ts';
import type { RouteTable } from '../http/router.ts';
import type { LastUsedRecorder } from '../keys/service.ts';
import type { MacroService } from '../macro/service.ts';
import type { PasswordHasher } from '../dashboard/password.ts';
import type { ListCursors } from '../core/cursor.ts';

export interface AppDeps {
  config: Config;
  /** Writes, admin work, and reads that must see them. */
  db: Database;
  /** Key resolution and request counting (its own pool, committing without waiting for the WAL flush). */
  authDb: Database;
  /** Read-only queries: the router over the primary and DATABASE_REPLICA_URLS when replicas are set (db/replicas.ts), else `db`. */
  readDb: Reads;
  logger: Logger;
  pool: WorkerPool;
  lastUsed: LastUsedRecorder;
  /** Macro series and the risk-free rate (one per process: it holds the FRED fetches in flight). */
  macro: MacroService;
  adminToken: string;
  version: string;
  /** Dashboard password hashing, on threads of its own (dashboard/password.ts). */
  passwords: PasswordHasher;
  /** Makes and checks the list cursors under the deployment's signing key, read from the primary at start (core/cursor.ts). */
  cursors: ListCursors;
}

/**
 * One API area: the public routes it declares, their handlers, and the admin
 * ingest kinds it adds. `mount` must attach a handler to each of `routes` and
 * to nothing else (RouteTable.build checks).
 */
export interface Area {
  routes: readonly RouteDefinition[];
  mount(routes: RouteTable, deps: AppDeps): void;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each kind has its own row type
  ingest?: Record<string, IngestKind<any>>;
}
