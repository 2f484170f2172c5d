import type { Database } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import type { EarningsReport, InstrumentEarningsQuery, MarketEarningsQuery } from './schema.ts';
import { sourcesMeta } from '../core/meta.ts';

function earningsResponse(data: EarningsReport[]) {
  return { data, meta: { asOf: new Date().toISOString(), source: sourcesMeta(new Set(data.map((r) => r.source))), stale: false } };
}

/** One instrument's reports, earliest first; 404 for an unknown instrument. */
export async function listInstrumentEarnings(db: Database, instrumentId: string, q: InstrumentEarningsQuery) {
  const data = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    return repo.selectReports(sql, { ...q, instrumentId });
  });
  return earningsResponse(data);
}

/** The calendar of every instrument reporting in the window (the schema caps it at 365 days), earliest first; 404 for an unknown instrumentId. */
export async function listMarketEarnings(db: Database, q: MarketEarningsQuery) {
  const data = await db.run(async (sql) => {
    if (q.instrumentId) await requireInstrument(sql, q.instrumentId);
    return repo.selectReports(sql, q);
  });
  return earningsResponse(data);
}
