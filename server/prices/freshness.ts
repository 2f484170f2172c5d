import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { daysBefore, freshness, seriesFreshness, utcDay, type Freshness, type SeriesStaleReason } from '../core/freshness.ts';

// What a price read's meta.stale needs to know of each series beyond the bars
// it returned: the last bar on or before the read's day, wherever the read's
// window lies (docs/api.md, "Freshness"). One descent of the primary key per
// instrument. The knowledge rule is written out here rather than read through
// dailyBarsAt or the intraday reads' minuteBarsAt, whose union the planner cannot descend with a
// LIMIT 1: on 400 instruments × 2,500 bars (TimescaleDB 2.28.3) the newest
// bar known at an instant took 1,245 ms through dailyBarsAt and 19-23 ms so.
//
// Each lookup first searches the RECENT_DAYS before the read's instant, a
// bound that keeps its plan to the chunks of those days. Unbounded, it is
// planned over every chunk of the history: the newest 1-minute bar of a coin
// with 10 years of it (523 chunks, 470 compressed) took 335 ms to plan and
// 33 ms to run, against 8 and 2 ms on one year, and 2-3 and 0.3 ms within
// the recent days on either (TimescaleDB 2.28.3). A series whose last bar is
// in those days is found there. The last completed session is never more
// than 4 days before the instant, so a series with no bar in them is stale
// whatever its last bar: only then is the unbounded lookup made, to tell
// series_behind from no_bars.
const RECENT_DAYS = 7;

/**
 * Each known instrument's asset class and last daily bar dated on or before
 * the UTC day of `instant` and known at `instant` (its stored revision, or a
 * kept earlier one, known by then: sql/019), as an asOf read would see it.
 */
export async function lastDailyBars(sql: ISql, ids: string[], instant: number): Promise<Map<string, { assetClass: string; lastBar: string | null }>> {
  if (!ids.length) return new Map();
  const recent = await lastDailyBarsSince(sql, ids, instant, daysBefore(instant, RECENT_DAYS));
  const older = [...recent].filter(([, r]) => r.lastBar === null).map(([id]) => id);
  if (older.length) for (const [id, r] of await lastDailyBarsSince(sql, older, instant, null)) recent.set(id, r);
  return recent;
}

/** lastDailyBars, among the bars dated after `after` (null: all). */
async function lastDailyBarsSince(sql: ISql, ids: string[], instant: number, after: string | null) {
  const at = new Date(instant);
  const rows = await timed(
    after === null ? 'daily_last_bars' : 'daily_last_bars_recent',
    sql<{ id: string; asset_class: string; last_bar: string | null }[]>`
      select i.id, i.asset_class, b.bar_date::text as last_bar
      from instruments i
      left join lateral (
        select d.bar_date from daily_bars d
        where d.instrument_id = i.id and d.bar_date <= ${utcDay(instant)}::date and (${after}::date is null or d.bar_date > ${after}::date)
          and (d.known_at <= ${at} or exists (
            select 1 from daily_bar_revisions r
            where r.instrument_id = d.instrument_id and r.bar_date = d.bar_date and r.known_at <= ${at}
          ))
        order by d.bar_date desc limit 1
      ) b on true
      where i.id = any(${ids}::uuid[])
    `,
  );
  return new Map(rows.map((r) => [r.id, { assetClass: r.asset_class, lastBar: r.last_bar }]));
}

/**
 * The freshness of daily series read at `instant`: stale when any is (the
 * first reason found, in `ids` order). `bar_marked_stale` only when the
 * caller says a returned bar was marked so.
 */
export async function dailySeriesFreshness(sql: ISql, ids: string[], instant: number): Promise<Freshness<'series_behind' | 'no_bars'>>;
export async function dailySeriesFreshness(sql: ISql, ids: string[], instant: number, barMarkedStale: boolean): Promise<Freshness<SeriesStaleReason>>;
export async function dailySeriesFreshness(sql: ISql, ids: string[], instant: number, barMarkedStale = false): Promise<Freshness<SeriesStaleReason>> {
  const last = await lastDailyBars(sql, ids, instant);
  // Unknown ids are not series: only the instruments found count.
  const each = ids.filter((id) => last.has(id)).map((id) => seriesFreshness(last.get(id)!.lastBar, instant, last.get(id)!.assetClass, barMarkedStale));
  return each.find((f) => f.stale) ?? freshness<SeriesStaleReason>();
}

/**
 * An intraday series' freshness at `instant`: its last 1-minute bar at or
 * before it and known by then, on the New York day (UTC day for crypto) of the last completed
 * session or later, else stale.
 */
export async function intradayFreshness(sql: ISql, id: string, instant: number): Promise<Freshness<SeriesStaleReason>> {
  const recent = await lastMinuteBar(sql, id, instant, new Date(instant - RECENT_DAYS * 86_400_000));
  const row = recent?.last_bar === null ? await lastMinuteBar(sql, id, instant, null) : recent;
  return seriesFreshness(row?.last_bar, instant, row?.asset_class);
}

/**
 * The instrument's asset class and the day of its last 1-minute bar at or
 * before $1 and known by then, after $2 (null: all); $3 the instrument.
 *
 * Sent unprepared (postgres.js's unsafe, which does not prepare): PostgreSQL
 * then plans it for each call with its values, over the chunks of the
 * window alone. Prepared, from the sixth call on a connection PostgreSQL
 * plans it once for any values and keeps that plan, which holds every chunk
 * of intraday_bars: on a 10-year history (523 chunks, 470 compressed)
 * building it took 336 ms, and each call with it 4-6 ms to lock and exclude
 * the chunks, against 0.5 ms planned with the values.
 */
const LAST_MINUTE_BAR = `
  select i.asset_class,
    (select to_char(b.bar_ts at time zone case when i.asset_class = 'crypto' then 'UTC' else 'America/New_York' end, 'YYYY-MM-DD')
     from intraday_bars b
     where b.instrument_id = i.id and b.bar_ts <= $1::timestamptz and ($2::timestamptz is null or b.bar_ts > $2::timestamptz)
       and (b.known_at <= $1::timestamptz or exists (
         select 1 from intraday_bar_revisions r where r.instrument_id = b.instrument_id and r.bar_ts = b.bar_ts and r.known_at <= $1::timestamptz
       ))
     order by b.bar_ts desc limit 1) as last_bar
  from instruments i
  where i.id = $3::uuid
`;

async function lastMinuteBar(sql: ISql, id: string, instant: number, after: Date | null) {
  const [row] = await timed(
    after === null ? 'intraday_last_bar' : 'intraday_last_bar_recent',
    sql.unsafe<{ asset_class: string; last_bar: string | null }[]>(LAST_MINUTE_BAR, [new Date(instant), after, id]),
  );
  return row;
}
