import type { Config } from '../config.ts';
import type { Database, Reads } from '../db/database.ts';
import type { Logger } from '../observability/logger.ts';
import type { WorkerPool } from '../../workers/pool.ts';
import type { LastUsedRecorder } from '../keys/service.ts';
import type { MacroService } from '../macro/service.ts';
import type { PasswordHasher } from '../dashboard/password.ts';
import type { ListCursors } from '../core/cursor.ts';
import type { PricesDeps } from '../prices/routes.ts';

/**
 * Everything the service's parts need, opened once per process
 * (runtime/pools.ts). Each area declares the narrow deps its handlers need
 * (e.g. PricesDeps); AppDeps satisfies every one, which the area table
 * (areas.ts) makes the compiler check.
 */
export interface AppDeps {
  config: Config;
  /** Writes, admin work, and reads that must see them. */
  db: Database;
  /** Key resolution and request counting (its own pool, committing without waiting for the WAL flush). */
  authDb: Database;
  /** Read-only queries: the router over the primary and DATABASE_REPLICA_URLS when replicas are set (db/replica-router.ts), else `db`. */
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
  /** Download admission: this process's own slots, or the primary's when several processes serve (runtime/primary-link.ts). */
  downloadSlots: PricesDeps['downloadSlots'];
  /** Makes and checks the list cursors under the deployment's signing key, read from the primary at start (core/cursor.ts). */
  cursors: ListCursors;
}
