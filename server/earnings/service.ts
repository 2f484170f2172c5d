import type { Reads } from '../db/database.ts';
import { requireInstrument } from '../instruments/service.ts';
import * as repo from './repository.ts';
import type { EarningsReport, InstrumentEarningsQuery, MarketEarningsQuery } from './schema.ts';
import { sourcesMeta } from '../core/meta.ts';
import type { ISql } from '../db/sql.ts';
import { earningsFreshness, reportDateWindow } from './freshness.ts';
import { lookUpSourceSilence } from '../core/freshness.ts';

/**
 * The reports with their meta. Freshness is judged in the same read (`sql`):
 * on the sources of the returned rows, or without rows on those of the read's
 * scope (the instrument's, or every source).
 */
async function earningsResponse(sql: ISql, data: EarningsReport[], instrumentId: string | undefined, readAt: Date) {
  const sources = [...new Set(data.map((r) => r.source))];
  const window = reportDateWindow(readAt.getTime());
  const silence = await lookUpSourceSilence(
    sources,
    (of) => repo.sourcesReporting(sql, of, window),
    () => repo.scopeReporting(sql, instrumentId, window),
  );
  const fresh = earningsFreshness(data, readAt.getTime(), silence);
  return { data, meta: { asOf: readAt.toISOString(), source: sourcesMeta(new Set(sources)), ...fresh } };
}

/** One instrument's reports, earliest first; 404 for an unknown instrument. */
export async function listInstrumentEarnings(db: Reads, instrumentId: string, q: InstrumentEarningsQuery) {
  const readAt = new Date();
  return db.run(async (sql) => {
    await requireInstrument(sql, instrumentId);
    return earningsResponse(sql, await repo.selectReports(sql, { ...q, instrumentId }), instrumentId, readAt);
  });
}

/** The calendar of every instrument reporting in the window (the schema caps it at 365 days), earliest first; 404 for an unknown instrumentId. */
export async function listMarketEarnings(db: Reads, q: MarketEarningsQuery) {
  const readAt = new Date();
  return db.run(async (sql) => {
    if (q.instrumentId) await requireInstrument(sql, q.instrumentId);
    return earningsResponse(sql, await repo.selectReports(sql, q), q.instrumentId, readAt);
  });
}
