import type { Database } from '../db/database.ts';
import { sourcesMeta } from '../http/envelope.ts';
import * as repo from './repository.ts';
import type { EconomicEventsQuery } from './schema.ts';

/** The calendar, newest scheduled release first; one row past `limit` is read to tell whether more matched. */
export async function listEconomicEvents(db: Database, q: EconomicEventsQuery) {
  const rows = await db.run((sql) => repo.selectEvents(sql, { ...q, limit: q.limit + 1 }));
  const truncated = rows.length > q.limit;
  const data = truncated ? rows.slice(0, q.limit) : rows;
  return {
    data,
    meta: {
      asOf: new Date().toISOString(),
      source: sourcesMeta(new Set(data.map((e) => e.source))),
      stale: false,
      limit: q.limit,
      truncated,
    },
  };
}
