import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';

/**
 * The risk-free rate as it was known at an instant: no look-ahead.
 *
 * Two stored series answer, each observation counting as known from a fixed
 * instant and never before:
 *
 * - TB3MS (3-month Treasury bill, secondary market, monthly average), in the
 *   risk_free_rates table (sql/020_risk_free_rates.sql): a month's average is
 *   known from the first instant after the month ends, 00:00 UTC on the first
 *   day of the next month (TB3MS 2001-03-01 from 2001-04-01T00:00:00.000Z).
 * - DGS3MO (3-month Treasury, constant maturity, daily), the FRED copy in
 *   macro_observations: a day's observation is known from the end of its UTC
 *   day, 00:00 UTC the next day (2025-01-03 from 2025-01-04T00:00:00.000Z).
 *
 * At an instant T the answer is the observation with the latest known-from
 * instant at or before T across both (a tie goes to DGS3MO, a point
 * observation rather than an average); when none is known, there is no rate.
 * The hard-coded stand-in of the live route (TB3MS 2022-09) counts as one more
 * TB3MS observation, known from 2022-10-01, and is used only when it is more
 * recent than anything stored: never at an instant before it was known.
 */

export const RISK_FREE_SERIES_IDS = ['DGS3MO', 'TB3MS'] as const;
export type RiskFreeSeriesId = (typeof RISK_FREE_SERIES_IDS)[number];

/** How often a series publishes: what `stale` is measured against. */
export const RISK_FREE_CADENCE: Record<RiskFreeSeriesId, 'daily' | 'monthly'> = { DGS3MO: 'daily', TB3MS: 'monthly' };

const DAY_MS = 86_400_000;

/** A monthly average (dated the first of its month) is known from the first instant of the next month, UTC. */
export function monthlyKnownFrom(obsDate: string): Date {
  const year = Number(obsDate.slice(0, 4));
  const month = Number(obsDate.slice(5, 7));
  return new Date(Date.UTC(year, month, 1));
}

/** A daily observation is known from the end of its UTC day: 00:00 UTC the next day. */
export function dailyKnownFrom(obsDate: string): Date {
  return new Date(Date.parse(`${obsDate}T00:00:00.000Z`) + DAY_MS);
}

/**
 * A daily series is behind when its newest known observation has been known
 * for more than 4 days: a weekend and a holiday Monday or Friday keep the
 * Treasury market shut for at most 3 days in a row, so by then the next one
 * was due.
 */
export const DAILY_STALE_AFTER_MS = 4 * DAY_MS;

/**
 * Whether a newer observation of the series was due by `at`: for a monthly
 * series, when the observation is older than the month before `at`'s month
 * (its known-from is before the first instant of `at`'s month); for a daily
 * one, when it has been known for more than DAILY_STALE_AFTER_MS.
 */
export function newerObservationDue(seriesId: RiskFreeSeriesId, knownFrom: Date, at: Date): boolean {
  if (RISK_FREE_CADENCE[seriesId] === 'monthly') return knownFrom.getTime() < Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), 1);
  return at.getTime() - knownFrom.getTime() > DAILY_STALE_AFTER_MS;
}

/** One stored observation with the instant it counts as known from. */
export interface KnownObservation {
  seriesId: RiskFreeSeriesId;
  /** FRED's observation date yyyy-mm-dd (the first of the month for a monthly average). */
  date: string;
  /** Percent, as published. */
  value: number;
  knownFrom: Date;
  /** The row's source: the stored copy's (`fred` for a live DGS3MO copy) or the bundled snapshot's. */
  source: string;
}

interface LatestRow {
  at: Date;
  tb_series: RiskFreeSeriesId | null;
  tb_date: string | null;
  tb_value: number | null;
  tb_known_from: Date | null;
  tb_source: string | null;
  dg_date: string | null;
  dg_value: number | null;
  dg_source: string | null;
}

/**
 * For each instant, the latest risk_free_rates row known at it and the latest
 * DGS3MO observation of the stored copy known at it (obs_date before the
 * instant's UTC day), in one statement; each is one backward index step.
 */
export async function latestKnownAt(sql: ISql, instants: Date[]): Promise<Map<number, { table: KnownObservation | null; dgs3mo: KnownObservation | null }>> {
  const rows = await timed(
    'risk_free_known_at',
    sql<LatestRow[]>`
      select t.at, tb.series_id as tb_series, tb.obs_date::text as tb_date, tb.value as tb_value, tb.known_from as tb_known_from,
        tb.source as tb_source, dg.obs_date::text as dg_date, dg.value as dg_value, dg.source as dg_source
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
  return new Map(
    rows.map((r) => [
      r.at.getTime(),
      {
        table: r.tb_series === null ? null : { seriesId: r.tb_series, date: r.tb_date!, value: r.tb_value!, knownFrom: r.tb_known_from!, source: r.tb_source! },
        dgs3mo:
          r.dg_date === null ? null : { seriesId: 'DGS3MO', date: r.dg_date, value: r.dg_value!, knownFrom: dailyKnownFrom(r.dg_date), source: r.dg_source! },
      },
    ]),
  );
}

/** A row of the stored history, as the demo load (server/demo/risk-free-rates.ts) writes it. */
export interface RiskFreeHistoryRow {
  seriesId: RiskFreeSeriesId;
  date: string;
  value: number;
  knownFrom: Date;
  source: string;
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
