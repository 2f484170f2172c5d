import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { identifierList, timed } from '../db/sql.ts';
import { INTRADAY_NAMES, rollupOf, type Interval } from './repository.ts';
import { INTERVAL_MINUTES } from './schema.ts';

type Fragment = postgres.Fragment;

/**
 * The 1-minute bars as known at `knownAt` (sql/022) in [from, until): a bar
 * known then as it stands, else its latest revision known then (revisions
 * stated known at the same instant: the one replaced last). Same columns as
 * intraday_bars; the statement's instrument filter reaches inside.
 *
 * The span is written into both branches, the revisions' join included, as
 * constants, so only the span's chunks are planned and read. The statement's
 * own window filter cannot do that: over the buckets it is a filter on
 * date_bin(bar_ts), which excludes no chunk, and PostgreSQL does not carry a
 * range across the revisions' join. Without the span, a year's 1-hour bars
 * as known at an instant read every chunk of the history, compressed ones
 * decompressed: over HTTP, 3.05 s on 10 years of a coin's minutes (523
 * chunks, 470 compressed) against 1.07 s on one year; with it, 1.07 s on both
 * (medians of 9, two coins, TimescaleDB 2.28.3).
 */
function minuteBarsAt(sql: ISql, knownAt: Date, from: Date, until: Date): Fragment {
  const columns = (alias: string) =>
    identifierList(
      sql,
      INTRADAY_NAMES.map((c) => `${alias}.${c}`),
    );
  const within = (alias: string) => sql`${sql(`${alias}.bar_ts`)} >= ${from} and ${sql(`${alias}.bar_ts`)} < ${until}`;
  return sql`(
    select ${columns('b')}
    from intraday_bars b
    where b.as_of <= ${knownAt} and ${within('b')}
    union all
    select ${columns('r')}
    from (
      select distinct on (r.instrument_id, r.bar_ts) r.*
      from intraday_bar_revisions r
      join intraday_bars b on b.instrument_id = r.instrument_id and b.bar_ts = r.bar_ts and b.as_of > ${knownAt} and ${within('b')}
      where r.as_of <= ${knownAt} and ${within('r')}
      order by r.instrument_id, r.bar_ts, r.as_of desc, r.replaced_seq desc
    ) r
  )`;
}

/**
 * The bars at `interval` starting within [from, to] as known at `knownAt`:
 * the minutes (minuteBarsAt) from `from` to the end of the bucket that starts
 * at `to` or before, bucketed as the stored rollups are (prices/repository.ts,
 * rollupOf).
 */
export function intradayBarsAt(sql: ISql, knownAt: Date, interval: Interval, from: Date, to: Date): Fragment {
  const widthMs = INTERVAL_MINUTES[interval] * 60_000;
  const minutes = minuteBarsAt(sql, knownAt, from, new Date(to.getTime() + widthMs));
  return interval === '1min' ? minutes : rollupOf(sql, minutes, interval);
}

/**
 * The day of the instrument's last 1-minute bar at or before `knownAt` and
 * known by then (the New York day, the UTC day for crypto), among the bars
 * after `after` (null: all), with its asset class: the same rule as
 * minuteBarsAt, written for a walk of the primary key that stops at the
 * first bar known then. Undefined for an unknown instrument.
 *
 * Sent unprepared (postgres.js's unsafe, which does not prepare): PostgreSQL
 * then plans it for each call with its values, over the chunks of the
 * window alone. Prepared, from the sixth call on a connection PostgreSQL
 * plans it once for any values and keeps that plan, which holds every chunk
 * of intraday_bars: on a 10-year history (523 chunks, 470 compressed)
 * building it took 336 ms, and each call with it 4-6 ms to lock and exclude
 * the chunks, against 0.5 ms planned with the values.
 */
export async function lastMinuteBarDay(sql: ISql, instrumentId: string, knownAt: Date, after: Date | null) {
  const [row] = await timed(
    after === null ? 'intraday_last_bar' : 'intraday_last_bar_recent',
    sql.unsafe<{ assetClass: string; lastBar: string | null }[]>(LAST_MINUTE_BAR, [knownAt, after, instrumentId]),
  );
  return row;
}

const LAST_MINUTE_BAR = `
  select i.asset_class as "assetClass",
    (select to_char(b.bar_ts at time zone case when i.asset_class = 'crypto' then 'UTC' else 'America/New_York' end, 'YYYY-MM-DD')
     from intraday_bars b
     where b.instrument_id = i.id and b.bar_ts <= $1::timestamptz and ($2::timestamptz is null or b.bar_ts > $2::timestamptz)
       and (b.as_of <= $1::timestamptz or exists (
         select 1 from intraday_bar_revisions r where r.instrument_id = b.instrument_id and r.bar_ts = b.bar_ts and r.as_of <= $1::timestamptz
       ))
     order by b.bar_ts desc limit 1) as "lastBar"
  from instruments i
  where i.id = $3::uuid
`;

/**
 * How many 1-minute bars of the instrument are stored in [from, to]
 * whatever their knowledge time, and the earliest instant any of their
 * revisions became known (null: none stored).
 */
export async function storedMinuteBars(sql: ISql, instrumentId: string, from: Date, to: Date): Promise<{ bars: number; firstKnown: Date | null }> {
  const [row] = await timed(
    'intraday_stored_bars_in_window',
    sql<{ bars: number; firstKnown: Date | null }[]>`
      select count(*)::int as bars, least(min(b.as_of), (
        select min(r.as_of) from intraday_bar_revisions r
        where r.instrument_id = ${instrumentId} and r.bar_ts between ${from} and ${to}
      )) as "firstKnown"
      from intraday_bars b
      where b.instrument_id = ${instrumentId} and b.bar_ts between ${from} and ${to}
    `,
  );
  return { bars: row.bars, firstKnown: row.bars ? row.firstKnown : null };
}
