import type { Database } from '../db/database.ts';
import * as repo from './repository.ts';
import type { EconomicEventsQuery } from './schema.ts';
import { listPage } from '../core/meta.ts';

/** The calendar, newest scheduled release first; one row past `limit` is read to tell whether more matched. */
export async function listEconomicEvents(db: Database, q: EconomicEventsQuery) {
  const rows = await db.run((sql) => repo.selectEvents(sql, { ...q, limit: q.limit + 1 }));
  return listPage(rows, q.limit);
}
