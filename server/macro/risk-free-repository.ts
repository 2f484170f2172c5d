import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import type { RISK_FREE_SERIES } from './schema.ts';

type RiskFreeSeriesId = (typeof RISK_FREE_SERIES)[number];

/** A risk_free_rates row, as the demo load (server/demo/risk-free-rates.ts) writes it. */
export interface RiskFreeHistoryRow {
  seriesId: RiskFreeSeriesId;
  date: string;
  value: number;
  knownFrom: Date;
  source: string;
}

/** The latest observations known at `at`: the risk_free_rates row and the stored DGS3MO copy's, each absent when none is known. */
export interface LatestKnownRow {
  at: Date;
  table: RiskFreeHistoryRow | null;
  dgs3mo: { date: string; value: number; source: string } | null;
}

/**
 * A row of latestObservationsAt's statement: the columns of each lateral row
 * are all set when it matched (every column they read is not null) and all
 * null when it did not.
 */
type LatestRow = { at: Date } & (
  | { tbSeries: RiskFreeSeriesId; tbDate: string; tbValue: number; tbKnownFrom: Date; tbSource: string }
  | { tbSeries: null; tbDate: null; tbValue: null; tbKnownFrom: null; tbSource: null }
) &
  ({ dgDate: string; dgValue: number; dgSource: string } | { dgDate: null; dgValue: null; dgSource: null });

/**
 * For each instant, the latest risk_free_rates row known at it and the latest
 * DGS3MO observation of the stored copy known at it (obs_date before the
 * instant's UTC day), in one statement; each is one backward index step.
 */
export async function latestObservationsAt(sql: ISql, instants: Date[]): Promise<LatestKnownRow[]> {
  const rows = await timed(
    'risk_free_known_at',
    sql<LatestRow[]>`
      select t.at, tb.series_id as "tbSeries", tb.obs_date::text as "tbDate", tb.value as "tbValue", tb.known_from as "tbKnownFrom",
        tb.source as "tbSource", dg.obs_date::text as "dgDate", dg.value as "dgValue", dg.source as "dgSource"
      from unnest(${instants.map((i) => i.toISOString())}::timestamptz[]) as t (at)
      left join lateral (
        select r.series_id, r.obs_date, r.value, r.known_from, r.source
        from risk_free_rates r
        where r.known_from <= t.at
        order by r.known_from desc, r.series_id
        limit 1
      ) tb on true
      left join lateral (
        select o.obs_date, o.value, s.source
        from macro_observations o
        join macro_series s on s.series_id = o.series_id
        where o.series_id = 'DGS3MO' and o.obs_date < (t.at at time zone 'UTC')::date
        order by o.obs_date desc
        limit 1
      ) dg on true
    `,
  );
  return rows.map((r) => ({
    at: r.at,
    table: r.tbSeries === null ? null : { seriesId: r.tbSeries, date: r.tbDate, value: r.tbValue, knownFrom: r.tbKnownFrom, source: r.tbSource },
    dgs3mo: r.dgDate === null ? null : { date: r.dgDate, value: r.dgValue, source: r.dgSource },
  }));
}

/** Upserts history rows on (series, date); a stored row is rewritten only when a value differs. The counts. */
export async function storeHistory(sql: ISql, rows: RiskFreeHistoryRow[]): Promise<{ rows: number; inserted: number; updated: number; unchanged: number }> {
  const written = await sql<{ inserted: boolean }[]>`
    insert into risk_free_rates as stored (series_id, obs_date, known_from, value, source)
    select * from unnest(
      ${rows.map((r) => r.seriesId)}::text[],
      ${rows.map((r) => r.date)}::date[],
      ${rows.map((r) => r.knownFrom.toISOString())}::timestamptz[],
      ${rows.map((r) => r.value)}::float8[],
      ${rows.map((r) => r.source)}::text[]
    )
    on conflict (series_id, obs_date) do update set known_from = excluded.known_from, value = excluded.value, source = excluded.source
    where (stored.known_from, stored.value, stored.source) is distinct from (excluded.known_from, excluded.value, excluded.source)
    returning (xmax = 0) as inserted
  `;
  const inserted = written.filter((w) => w.inserted).length;
  return { rows: rows.length, inserted, updated: written.length - inserted, unchanged: rows.length - written.length };
}
