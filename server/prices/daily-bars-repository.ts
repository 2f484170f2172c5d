import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { dailyBarsAt, dailyBarsKnownAtWalk } from '../price-history/bars-repository.ts';
import { dayNumber } from '../core/day-numbers.ts';
import type { DailyColumns } from './packed-columns.ts';

// The reads of daily_bars that return columns or rows, called through
// daily-bars.ts. The price routes' read (CSV rows, or packed series for the
// JSON and columnar answers) is in daily-text-repository.ts.

/**
 * Daily bars as packed columns, one row per instrument, each column packed by
 * PostgreSQL into big-endian values: days since 1970-01-01 as int4, prices
 * and volume as float8 (NaN where absent), so the request thread decodes a
 * few strings per instrument instead of an object per bar. Each column
 * arrives as base64 text: a bytea would come as hex, two characters a byte,
 * where base64 takes four per three and Node decodes it natively. On a
 * 20-instrument, 360-bar close read that cut the request thread's CPU from
 * about 0.95 to 0.55 ms a read, and the garbage it leaves by a third.
 *
 * Only vendor-adjusted bars carry a reflects-through date (days since
 * 1970-01-01, int4), so `reflects` holds theirs alone and is null when the
 * window holds none, the common case: a value for every raw bar was a quarter
 * of a close-only read's bytes. When some bars are vendor-adjusted and some
 * raw, `reflects_days` names the days the values belong to; when all are, it
 * is null and `reflects` runs beside `days`.
 *
 * The aggregates carry no ORDER BY: each one would sort its input again
 * (PostgreSQL 15 sorts per ordered aggregate), which doubled the query's cost.
 * Every aggregate of a group consumes the same rows in the same order, so the
 * columns stay aligned with each other; the caller puts them in date order.
 */
interface PackedSeriesRow {
  instrument_id: string;
  /** Base64 of the packed values; null for an aggregate over no value. */
  days: string | null;
  reflects: string | null;
  reflects_days: string | null;
  /** Absent from a close-only read. */
  open_price?: string | null;
  high_price?: string | null;
  low_price?: string | null;
  volume?: string | null;
  close_price: string | null;
}

export function selectPackedSeries(sql: ISql, instrumentIds: string[], from: string, to: string, fields: 'close' | 'ohlcv', knownAt?: Date) {
  const base64 = (values: postgres.Fragment, name: string) => sql`encode(${values}, 'base64') as ${sql(name)}`;
  const days = (column: string) => sql`string_agg(int4send(${sql(column)} - date '1970-01-01'), ''::bytea)`;
  const floats = (value: postgres.Fragment) => sql`string_agg(float8send(${value}), ''::bytea)`;
  const orNaN = (column: string) => base64(floats(sql`coalesce(${sql(column)}, 'NaN'::float8)`), column);
  const vendorAdjusted = sql`filter (where reflects_actions_through is not null)`;
  return sql<PackedSeriesRow[]>`
    select
      instrument_id,
      ${base64(days('bar_date'), 'days')},
      ${base64(sql`${days('reflects_actions_through')} ${vendorAdjusted}`, 'reflects')},
      ${base64(sql`case when count(reflects_actions_through) < count(*) then ${days('bar_date')} ${vendorAdjusted} end`, 'reflects_days')},
      ${fields === 'ohlcv' ? sql`${orNaN('open_price')}, ${orNaN('high_price')}, ${orNaN('low_price')}, ${orNaN('volume')},` : sql``}
      ${base64(floats(sql`close_price`), 'close_price')}
    from ${dailyBarsAt(sql, undefined, knownAt)} b
    where instrument_id = any (${instrumentIds}::uuid[])
      and bar_date between ${from}::date and ${to}::date
    group by instrument_id
  `;
}

/**
 * The instrument's last `count` raw daily bars dated on or before `day` as
 * known at `knownAt`, as columns in ascending date order (vendor-adjusted
 * bars are not raw prices and are skipped): close, high and low, NaN where
 * the source published no value; open and volume are not read. At most a few
 * dozen bars, so the rows are mapped here rather than packed by PostgreSQL.
 */
export async function rawBarsUpTo(sql: ISql, instrumentId: string, day: string, count: number, knownAt: Date): Promise<DailyColumns> {
  const rows = await sql<{ bar_date: string; close_price: number; high_price: number | null; low_price: number | null }[]>`
    select bar_date, close_price, high_price, low_price
    from ${dailyBarsKnownAtWalk(sql, knownAt)} b
    where instrument_id = ${instrumentId} and bar_date <= ${day} and price_basis = 'raw'
    order by bar_date desc
    limit ${count}
  `;
  const n = rows.length;
  const bars: DailyColumns = {
    dates: new Int32Array(n),
    open: new Float64Array(0),
    high: new Float64Array(n),
    low: new Float64Array(n),
    close: new Float64Array(n),
    volume: new Float64Array(0),
  };
  // The rows come newest first.
  rows.forEach((r, k) => {
    const i = n - 1 - k;
    bars.dates[i] = dayNumber(r.bar_date);
    bars.close[i] = r.close_price;
    bars.high[i] = r.high_price ?? NaN;
    bars.low[i] = r.low_price ?? NaN;
  });
  return bars;
}

/**
 * For each instant, the instrument's latest raw daily close known at it and
 * dated on or before its UTC day (vendor-adjusted bars are not raw prices and
 * are skipped), by the instant's milliseconds.
 */
export async function rawClosesKnownAt(sql: ISql, instrumentId: string, instants: Date[]): Promise<Map<number, { barDate: string; close: number }>> {
  const rows = await timed(
    'option_underlying_closes',
    sql<{ at: Date; barDate: string; close: number }[]>`
      select t.at, b.bar_date as "barDate", b.close_price as close
      from unnest(${instants.map((t) => t.toISOString())}::timestamptz[]) as t (at)
      cross join lateral (
        select bar_date, close_price
        from ${dailyBarsKnownAtWalk(sql, sql`t.at`)} b
        where instrument_id = ${instrumentId} and bar_date <= (t.at at time zone 'UTC')::date and price_basis = 'raw'
        order by bar_date desc
        limit 1
      ) b
    `,
  );
  return new Map(rows.map(({ at, ...close }) => [at.getTime(), close]));
}

/**
 * Each of `ids` that names an instrument, with its asset class and its last
 * daily bar dated on or before `day` (after `after` when given) and known at
 * `knownAt` (null: none); one descent of the primary key per instrument.
 */
export async function lastKnownBarDates(sql: ISql, ids: string[], day: string, knownAt: Date, after: string | null) {
  return timed(
    after === null ? 'daily_last_bars' : 'daily_last_bars_recent',
    sql<{ id: string; assetClass: string; lastBar: string | null }[]>`
      select i.id, i.asset_class as "assetClass", b.bar_date::text as "lastBar"
      from instruments i
      left join lateral (
        select bar_date
        from ${dailyBarsKnownAtWalk(sql, knownAt)} b
        where b.instrument_id = i.id and b.bar_date <= ${day}::date and (${after}::date is null or b.bar_date > ${after}::date)
        order by b.bar_date desc
        limit 1
      ) b on true
      where i.id = any(${ids}::uuid[])
    `,
  );
}

/**
 * For each of `ids`, how many bars are stored in [from, to] whatever their
 * knowledge time, and the earliest instant any of their revisions became
 * known: what tells a window with no bars known at an instant from a window
 * with no bars at all.
 */
export async function storedBarsInWindow(sql: ISql, ids: string[], from: string, to: string) {
  return timed(
    'daily_stored_bars_in_window',
    sql<{ instrumentId: string; bars: number; firstKnown: Date }[]>`
      select b.instrument_id as "instrumentId", count(*)::int as bars, least(min(b.as_of), (
        select min(r.as_of) from daily_bar_revisions r
        where r.instrument_id = b.instrument_id and r.bar_date between ${from}::date and ${to}::date
      )) as "firstKnown"
      from daily_bars b
      where b.instrument_id = any(${ids}::uuid[]) and b.bar_date between ${from}::date and ${to}::date
      group by b.instrument_id
    `,
  );
}

/** The sources of the instrument's bars on `days`, as stored (the latest revisions). */
export async function barSources(sql: ISql, instrumentId: string, days: string[]): Promise<string[]> {
  const rows = await timed(
    'daily_bar_sources',
    sql<{ source: string }[]>`
      select distinct source
      from daily_bars
      where instrument_id = ${instrumentId} and bar_date = any(${days}::date[])
    `,
  );
  return rows.map((r) => r.source);
}

/**
 * The span of bars around the instruments' days: from the session before the
 * session of an instrument's first day (the bar on or before that day and the
 * one before it) to the `lagSessions`-th session after its last day, the
 * widest over all the instruments. `days` is a relation of (instrument_id,
 * first_day, last_day). Each end is found through the instrument's bars (the
 * daily_bars key), so a gap in the bars cannot cut a lag short; a day with no
 * such bar falls back to the day itself. Null when `days` is empty.
 */
export async function sessionSpan(sql: ISql, days: postgres.Fragment, lagSessions: number): Promise<{ from: string; to: string } | null> {
  const [row] = await sql<{ from: string | null; to: string | null }[]>`
    with spans as (${days})
    select
      min(coalesce(
        (select min(b.bar_date) from (
          select bar_date from daily_bars where instrument_id = s.instrument_id and bar_date <= s.first_day order by bar_date desc limit 2
        ) b),
        s.first_day)) as from,
      max(coalesce(
        (select max(b.bar_date) from (
          select bar_date from daily_bars where instrument_id = s.instrument_id and bar_date > s.last_day order by bar_date limit ${lagSessions}
        ) b),
        s.last_day)) as to
    from spans s
  `;
  return row.from && row.to ? { from: row.from, to: row.to } : null;
}
