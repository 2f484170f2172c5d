import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { effectiveSymbol } from '../instruments/repository.ts';
import type { ImpliedVolatilitySnapshot, TermStructurePoint } from './schema.ts';

export interface LatestSnapshotsQuery {
  /** Distinct, lower-case: one result per id, in this order. */
  instrumentIds: string[];
  /** The day freshness is counted back from: asOf, or today (UTC). */
  end: string;
  /** Only snapshots dated on or before `end` count (asOf given); otherwise any stored snapshot may be the newest. */
  capAtEnd: boolean;
  maxAgeDays: number;
  includeTermStructure: boolean;
}

/** One requested id: whether it names an instrument, and its newest fresh snapshot if it has one. */
export interface RequestedInstrument {
  instrumentId: string;
  known: boolean;
  snapshot: ImpliedVolatilitySnapshot | null;
}

/** An instrument's row with its latest snapshot's columns: as_of_date and source are both set when a snapshot was found, both null when not. */
type LatestSnapshotRow = {
  instrument_id: string;
  known: boolean;
  symbol: string | null;
  underlying_price: number | null;
  atm_implied_volatility: number | null;
  implied_volatility_30d: number | null;
  historical_volatility_30d: number | null;
  parkinson_historical_volatility_30d: number | null;
  put_call_iv_ratio_30d: number | null;
  /** As stored by the iv-snapshots ingest (TermStructurePointSchema of options/schema.ts); selected only when asked for. */
  term_structure?: { daysToExpiry: number; atmImpliedVolatility: number | null }[];
} & ({ as_of_date: string; source: string } | { as_of_date: null; source: null });

function toRequested(r: LatestSnapshotRow): RequestedInstrument {
  if (r.as_of_date === null) return { instrumentId: r.instrument_id, known: r.known, snapshot: null };
  const termStructure = r.term_structure
    ?.map((p): TermStructurePoint => ({ daysToExpiry: p.daysToExpiry, atmImpliedVolatility: p.atmImpliedVolatility }))
    .sort((a, b) => a.daysToExpiry - b.daysToExpiry);
  return {
    instrumentId: r.instrument_id,
    known: r.known,
    snapshot: {
      instrumentId: r.instrument_id,
      symbol: r.symbol,
      atmImpliedVolatility: r.atm_implied_volatility,
      underlyingPrice: r.underlying_price,
      asOfDate: r.as_of_date,
      volatilitySurface: {
        impliedVolatility30d: r.implied_volatility_30d,
        historicalVolatility30d: r.historical_volatility_30d,
        parkinsonHistoricalVolatility30d: r.parkinson_historical_volatility_30d,
        putCallIvRatio30d: r.put_call_iv_ratio_30d,
        asOfDate: r.as_of_date,
      },
      ...(termStructure ? { termStructure } : {}),
      source: r.source,
    },
  };
}

/**
 * Each requested instrument's newest snapshot dated from `end` − maxAgeDays
 * (and, when capped, up to `end`), with the symbol in effect on that day, in
 * one statement. The newest snapshot overall is fresh exactly when one exists
 * in that range, so each id is one backward probe of the primary key
 * (instrument_id, as_of_date) bounded by the range: older history is never read.
 */
export function latestSnapshotsStatement(sql: ISql, q: LatestSnapshotsQuery) {
  return sql<LatestSnapshotRow[]>`
    select
      r.id as instrument_id,
      i.id is not null as known,
      e.symbol,
      v.as_of_date,
      v.underlying_price,
      v.atm_implied_volatility,
      v.implied_volatility_30d,
      v.historical_volatility_30d,
      v.parkinson_historical_volatility_30d,
      v.put_call_iv_ratio_30d,
      v.source
      ${q.includeTermStructure ? sql`, v.term_structure` : sql``}
    from unnest(${q.instrumentIds}::uuid[]) with ordinality as r (id, ord)
    left join instruments i on i.id = r.id
    left join lateral (
      select *
      from iv_snapshots s
      where s.instrument_id = r.id
        and s.as_of_date >= ${q.end}::date - ${q.maxAgeDays}::int
        ${q.capAtEnd ? sql`and s.as_of_date <= ${q.end}::date` : sql``}
      order by s.as_of_date desc
      limit 1
    ) v on true
    ${effectiveSymbol(sql, sql`v.as_of_date`)}
    order by r.ord
  `;
}

export async function latestSnapshots(sql: ISql, q: LatestSnapshotsQuery): Promise<RequestedInstrument[]> {
  const rows = await timed('latest_iv_snapshots', latestSnapshotsStatement(sql, q));
  return rows.map(toRequested);
}
