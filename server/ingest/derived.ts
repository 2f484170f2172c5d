import { z } from 'zod';
import type { Database } from '../db/database.ts';
import type { MacroService } from '../macro/service.ts';
import { DerivedReactionsSchema } from '../event-reactions/schema.ts';
import { DerivedSnapshotsSchema } from '../options/schema.ts';
import { DerivedLeadsSchema } from '../sentiment/schema.ts';
import type { WorkerPool } from '../../workers/pool.ts';

/**
 * The derive step's vocabulary: what it needs and what it answers. The step
 * itself (which derivations run, and when) is server/wiring/derivations.ts;
 * the admin API answers its result and the demo load reports it.
 */

/** What deriving needs: the primary (derived rows are written), the risk-free rates the implied volatilities are solved at, and the worker pool. */
export interface DeriveDeps {
  db: Database;
  macro: Pick<MacroService, 'riskFreeRatesKnownAt'>;
  pool: WorkerPool;
}

/** `POST /admin/v1/derive`'s narrowing: whole instruments, or (absent) everything. */
export interface DeriveRequest {
  instrumentIds?: string[];
}

/** What one run derived, by derivation; a derivation with nothing to do is absent. */
export const DerivedSchema = z
  .strictObject({
    ivSnapshots: DerivedSnapshotsSchema.optional(),
    eventReactions: DerivedReactionsSchema.optional(),
    sourceLeads: DerivedLeadsSchema.optional(),
  })
  .meta({ id: 'Derived' });

export type Derived = z.infer<typeof DerivedSchema>;
