import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { freshness, seriesFreshness, utcDay, type Freshness, type SeriesStaleReason } from '../core/freshness.ts';

// What a price read's meta.stale needs to know of each series beyond the bars
// it returned: the last bar on or before the read's day, wherever the read's
// window lies (docs/api.md, "Freshness"). One descent of the primary key per
// instrument. The knowledge rule is written out here rather than read through
// dailyBarsAt or the intraday reads' minuteBarsAt, whose union the planner cannot descend with a
// LIMIT 1: on 400 instruments × 2,500 bars (TimescaleDB 2.28.3) the newest
// bar known at an instant took 1,245 ms through dailyBarsAt and 19-23 ms so.

/**
 * Each known instrument's asset class and last daily bar dated on or before
 * the UTC day of `instant` and known at `instant` (its stored revision, or a
 * kept earlier one, known by then: sql/019), as an asOf read would see it.
 */
export async function lastDailyBars(sql: ISql, ids: string[], instant: number): Promise<Map<string, { assetClass: string; lastBar: string | null }>> {
  if (!ids.length) return new Map();
  const at = new Date(instant);
  const rows = await timed(
    'daily_last_bars',
    sql<{ id: string; asset_class: string; last_bar: string | null }[]>`
      select i.id, i.asset_class, b.bar_date::text as last_bar
      from instruments i
      left join lateral (
        select d.bar_date from daily_bars d
        where d.instrument_id = i.id and d.bar_date <= ${utcDay(instant)}::date
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
  const [row] = await timed(
    'intraday_last_bar',
    sql<{ asset_class: string; last_bar: string | null }[]>`
      select i.asset_class,
        (select to_char(b.bar_ts at time zone case when i.asset_class = 'crypto' then 'UTC' else 'America/New_York' end, 'YYYY-MM-DD')
         from intraday_bars b
         where b.instrument_id = i.id and b.bar_ts <= ${new Date(instant)}
           and (b.known_at <= ${new Date(instant)} or exists (
             select 1 from intraday_bar_revisions r where r.instrument_id = b.instrument_id and r.bar_ts = b.bar_ts and r.known_at <= ${new Date(instant)}
           ))
         order by b.bar_ts desc limit 1) as last_bar
      from instruments i
      where i.id = ${id}
    `,
  );
  return seriesFreshness(row?.last_bar, instant, row?.asset_class);
}
