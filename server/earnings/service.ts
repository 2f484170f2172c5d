import type { Reads } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import type { EarningsReport, InstrumentEarningsQuery, MarketEarningsQuery } from './schema.ts';
import { sourcesMeta } from '../core/meta.ts';
import { freshness, utcDay } from '../core/freshness.ts';

/**
 * The calendar is fresh unless a returned report is still `scheduled` on a
 * day after its reportDate (UTC): the report is out and the stored calendar
 * has not caught up (docs/api.md, "Freshness").
 */
export function earningsFreshness(data: Pick<EarningsReport, 'status' | 'reportDate'>[], readAt: number) {
  const today = utcDay(readAt);
  return freshness<'report_past_due'>(data.some((r) => r.status === 'scheduled' && r.reportDate < today) && 'report_past_due');
}

function earningsResponse(data: EarningsReport[]) {
  const readAt = new Date();
  return {
    data,
    meta: { asOf: readAt.toISOString(), source: sourcesMeta(new Set(data.map((r) => r.source))), ...earningsFreshness(data, readAt.getTime()) },
  };
}

/** One instrument's reports, earliest first; 404 for an unknown instrument. */
export async function listInstrumentEarnings(db: Reads, instrumentId: string, q: InstrumentEarningsQuery) {
  const data = await db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    return repo.selectReports(sql, { ...q, instrumentId });
  });
  return earningsResponse(data);
}

/** The calendar of every instrument reporting in the window (the schema caps it at 365 days), earliest first; 404 for an unknown instrumentId. */
export async function listMarketEarnings(db: Reads, q: MarketEarningsQuery) {
  const data = await db.run(async (sql) => {
    if (q.instrumentId) await requireInstrument(sql, q.instrumentId);
    return repo.selectReports(sql, q);
  });
  return earningsResponse(data);
}
