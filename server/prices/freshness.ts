import type { ISql } from '../db/sql.ts';
import { daysBefore, freshness, seriesFreshness, utcDay, type Freshness, type SeriesStaleReason } from '../core/freshness.ts';
import { readLastBarDates } from './daily-bars.ts';
import { readLastMinuteBarDay } from './intraday-bars.ts';
import { FIRST_DAY_MS } from '../core/day-numbers.ts';

// What a price read's meta.stale needs to know of each series beyond the bars
// it returned: the last bar on or before the read's day, as known at the
// read's instant, wherever the read's window lies (docs/api.md, "Freshness").
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
 * the UTC day of `instant` and known at `instant`, as an asOf read would see it.
 */
export async function lastDailyBars(sql: ISql, ids: string[], instant: number): Promise<Map<string, { assetClass: string; lastBar: string | null }>> {
  if (!ids.length) return new Map();
  const at = new Date(instant);
  const day = utcDay(instant);
  const recent = await readLastBarDates(sql, ids, day, at, daysBefore(instant, RECENT_DAYS));
  const older = [...recent].filter(([, r]) => r.lastBar === null).map(([id]) => id);
  if (older.length) for (const [id, r] of await readLastBarDates(sql, older, day, at, null)) recent.set(id, r);
  return recent;
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
  const each = ids.flatMap((id) => {
    const series = last.get(id);
    return series ? [seriesFreshness(series.lastBar, instant, series.assetClass, barMarkedStale)] : [];
  });
  return each.find((f) => f.stale) ?? freshness<SeriesStaleReason>();
}

/** An instrument's asset class and the day of its last 1-minute bar, as readLastMinuteBarDay finds them. */
export type LastMinuteBar = { assetClass: string; lastBar: string | null };

/**
 * The instrument's asset class and its last 1-minute bar in the RECENT_DAYS
 * before `instant`, known by then (lastBar null: none there); undefined for
 * an unknown instrument. An intraday read takes it as its instrument check
 * too, and hands it to intradayFreshness.
 */
export function recentMinuteBar(sql: ISql, id: string, instant: number): Promise<LastMinuteBar | undefined> {
  // Not before FIRST_DAY: a Date before it is sent as year 0, which PostgreSQL refuses.
  const recentFrom = new Date(Math.max(instant - RECENT_DAYS * 86_400_000, FIRST_DAY_MS));
  return readLastMinuteBarDay(sql, id, new Date(instant), recentFrom);
}

/**
 * An intraday series' freshness at `instant`, from its recent last bar
 * (recentMinuteBar): its last 1-minute bar at or before `instant` and known
 * by then, on the New York day (UTC day for crypto) of the last completed
 * session or later, else stale. `readBars`: the read returned bars, all
 * known at `instant`, so the series has one; when none is in the recent days
 * it is behind, and the unbounded lookup, there only to tell series_behind
 * from no_bars, is not made (6.2 ms of a year's hourly read, planned over
 * its 53 weekly chunks).
 */
export async function intradayFreshness(
  sql: ISql,
  id: string,
  instant: number,
  recent: LastMinuteBar,
  readBars: boolean,
): Promise<Freshness<SeriesStaleReason>> {
  if (recent.lastBar === null && readBars) return freshness<'series_behind'>('series_behind');
  const row = recent.lastBar === null ? await readLastMinuteBarDay(sql, id, new Date(instant), null) : recent;
  return seriesFreshness(row?.lastBar, instant, row?.assetClass);
}
