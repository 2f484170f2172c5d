// The growth scenario's histories: daily and 1-minute bars written straight
// into the service's tables by INSERT ... SELECT over generate_series, one
// chunk-sized statement at a time, then corrections, rollups, compression
// and the storage each database ends up with.
//
// Every bar's values are a function of its instrument's ordinal and its day
// (or minute) alone, never of the bars before it, so a history that starts
// earlier holds exactly the same bars in the span both cover: the 10×
// database is the 1× one with older history added.
import type postgres from 'postgres';
import type { ISql } from '../../server/db/sql.ts';
import { log } from '../lib/harness.ts';
import { round } from '../lib/stats.ts';

type Fragment = postgres.Fragment;

/** One timed step of a load. */
export interface LoadStep {
  rows: number;
  seconds: number;
  statements: number;
}

const seconds = (started: number) => round((performance.now() - started) / 1000, 1);

/**
 * A bar's prices from the columns `c` (its unrounded close) and `p` (a
 * phase, radians) of the row: open within 1% of the close, high and low up to
 * 1% beyond them, so high ≥ open, close ≥ low. Four decimals, as the other
 * scenarios' prices carry, so the answer's text is as long as theirs: an
 * integer divided by 10^4 is the double nearest the decimal, as the decimal's
 * text would read. All in float8: numeric arithmetic made generating the rows
 * cost more than inserting them.
 */
function ohlc(sql: ISql): Fragment {
  const r4 = (x: Fragment) => sql`round((${x}) * 10000) / 10000`;
  const open = sql`c * (1 + 0.01::float8 * sin(p * 2.3::float8))`;
  return sql`
    ${r4(open)} as open_price,
    ${r4(sql`greatest(${open}, c) * (1 + 0.005::float8 * (1 + sin(p * 0.9::float8)))`)} as high_price,
    ${r4(sql`least(${open}, c) * (1 - 0.005::float8 * (1 + cos(p * 1.3::float8)))`)} as low_price,
    ${r4(sql`c`)} as close_price`;
}

/**
 * Daily bars for every weekday of [from, to] of the instruments `ids`, one
 * statement per calendar year (a daily_bars chunk is 365 days). Known
 * (as_of) at the end of the bar's day, as history without a recorded
 * knowledge time was taken to be.
 */
export async function loadDailyBars(sql: ISql, ids: string[], from: string, to: string): Promise<LoadStep> {
  const started = performance.now();
  let rows = 0;
  let statements = 0;
  const firstYear = Number(from.slice(0, 4));
  const lastYear = Number(to.slice(0, 4));
  for (let year = firstYear; year <= lastYear; year++) {
    const lo = year === firstYear ? from : `${year}-01-01`;
    const hi = year === lastYear ? to : `${year}-12-31`;
    const result = await sql`
      insert into daily_bars (
        instrument_id, bar_date, open_price, high_price, low_price, close_price, volume,
        quote_currency, quote_unit, source, as_of
      )
      select i.id, d.bar_date, ${ohlc(sql)},
        1000 + abs(hashint8(d.n::bigint * 1000 + i.k)) % 1000000,
        'USD', 'USD per share', 'bench', d.known
      from (
        select day::date as bar_date, (day::date - date '1970-01-01')::float8 as n,
          (day + interval '1 day' - interval '1 millisecond') at time zone 'UTC' as known
        from generate_series(${lo}::date, ${hi}::date, interval '1 day') as day
        where extract(isodow from day) < 6
      ) d
      cross join unnest(${ids}::uuid[]) with ordinality as i (id, k)
      cross join lateral (
        select (20 + (i.k * 37) % 200) * (1 + 0.3::float8 * sin(d.n / 400 + i.k)) * (1 + 0.02::float8 * sin(d.n * 1.7::float8 + i.k * 3.1::float8)) as c,
          d.n + i.k as p
      ) v
    `;
    rows += result.count;
    statements++;
    if (year % 10 === 0 || year === lastYear) log(`growth: daily bars through ${hi}: ${rows} rows in ${seconds(started)} s`);
  }
  return { rows, seconds: seconds(started), statements };
}

/**
 * 1-minute bars for every minute of [fromMs, toMs) of the instruments `ids`
 * (a 24-hour market), one statement per 7 days (an intraday_bars chunk).
 * Known (as_of) at the end of the bar's minute,
 * except about one bar in 10,000 before `correctBefore` (chosen by instrument
 * and minute alone, so the same bars in both histories), stored as corrected
 * a day later: the close 1% higher, and what it replaced kept in
 * intraday_bar_revisions with the instant that was known, as an intraday
 * upload keeps it
 * (prices/repository.ts, writeStagedIntradayBars; intraday bars have no
 * versions). Written with the bars rather than by an upload: an upload
 * re-materialises the rollups from its first to its last minute, and one
 * spanning years would rebuild all of them.
 */
export async function loadMinuteBars(sql: ISql, ids: string[], fromMs: number, toMs: number, correctBefore: Date): Promise<LoadStep & { corrected: number }> {
  const started = performance.now();
  const week = 7 * 86_400_000;
  let rows = 0;
  let statements = 0;
  for (let lo = fromMs; lo < toMs; lo += week) {
    const hi = Math.min(toMs, lo + week);
    const result = await sql`
      with bars as materialized (
        select i.id as instrument_id, m.bar_ts, ${ohlc(sql)},
          1 + abs(hashint8(m.n * 100 + i.k)) % 5000 as volume,
          abs(hashint8(m.n * 7919 + i.k)) % 10000 = 0 and m.bar_ts < ${correctBefore} as corrected
        from (
          select t as bar_ts, (date_part('epoch', t) / 60)::bigint as n
          from generate_series(${new Date(lo)}::timestamptz, ${new Date(hi - 60_000)}::timestamptz, interval '1 minute') as t
        ) m
        cross join unnest(${ids}::uuid[]) with ordinality as i (id, k)
        cross join lateral (
          select (16000 + 1000 * i.k) * (1 + 0.2::float8 * sin(m.n::float8 / 90000 + i.k)) * (1 + 0.002::float8 * sin(m.n * 0.37::float8 + i.k * 3.1::float8)) as c,
            (m.n + i.k)::float8 as p
        ) v
      ),
      kept as (
        insert into intraday_bar_revisions (
          instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume,
          quote_currency, quote_unit, source, as_of
        )
        select instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume,
          'USD', 'USD per BTC', 'bench', bar_ts + interval '1 minute'
        from bars
        where corrected
      )
      insert into intraday_bars (
        instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume,
        quote_currency, quote_unit, source, as_of
      )
      select instrument_id, bar_ts, open_price,
        case when corrected then greatest(high_price, fixed) else high_price end,
        low_price,
        case when corrected then fixed else close_price end,
        volume, 'USD', 'USD per BTC', 'bench', known
      from bars
      cross join lateral (
        select round(close_price * 1.01::float8 * 10000) / 10000 as fixed,
          bar_ts + case when corrected then interval '1 day' else interval '1 minute' end as known
      ) f
    `;
    rows += result.count;
    statements++;
    if (statements % 52 === 0 || hi === toMs)
      log(`growth: 1-minute bars through ${new Date(hi - 60_000).toISOString()}: ${rows} rows in ${seconds(started)} s`);
  }
  const [{ corrected }] = await sql<{ corrected: number }[]>`select count(*)::int as corrected from intraday_bar_revisions`;
  return { rows, seconds: seconds(started), statements, corrected };
}

/** Which stored bars were later corrected: about one in `oneIn`, chosen by a hash of the bar's instrument and time alone, so the same bars in both histories. */
const corrected = (sql: ISql, time: string, oneIn: number) => sql`abs(hashtext(instrument_id::text || ${sql(time)}::text)) % ${oneIn} = 0`;

/**
 * The corrections of the daily bars, as the CSV of an upload through the admin
 * API (which keeps what each replaces in daily_bar_revisions and bumps the
 * instruments' versions, sql/015 and sql/022): the close 1% higher, known
 * (asOf) 5 days after the bar's day. About one bar in 1,000, dated `through`
 * or before.
 */
export async function dailyCorrectionsCsv(sql: ISql, through: string): Promise<{ csv: string; rows: number }> {
  const rows = await sql<{ line: string }[]>`
    select concat_ws(',', instrument_id, bar_date, open_price, greatest(high_price, c), low_price, c, volume,
      quote_currency, quote_unit, source, to_char((bar_date + 5) at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')) as line
    from daily_bars
    cross join lateral (select round((close_price * 1.01)::numeric, 4)::float8 as c) v
    where ${corrected(sql, 'bar_date', 1000)} and bar_date <= ${through}::date
    order by instrument_id, bar_date
  `;
  const header = 'instrumentId,barDate,openPrice,highPrice,lowPrice,closePrice,volume,quoteCurrency,quoteUnit,source,asOf\n';
  return { csv: header + rows.map((r) => `${r.line}\n`).join(''), rows: rows.length };
}

/**
 * Materialises the continuous aggregates as the ingest path would have
 * (prices/repository.ts, refreshContinuousAggregates): the 1-hour rollup,
 * which the reads use, over the whole history; the 5-, 15- and 30-minute
 * rollups from `finerFrom` (the read window) only: no read here touches
 * them, and over a long history they cost more than the rest of the load
 * (on 10 years of two coins, 10.5 million minutes, the 5-minute rollup took
 * 394 s to materialise, the 1-hour one 30 s).
 */
export async function refreshRollups(sql: ISql, finerFrom: Date, to: Date): Promise<LoadStep> {
  const started = performance.now();
  for (const [rollup, from] of [
    ['intraday_bars_1hour', null],
    ['intraday_bars_30min', finerFrom],
    ['intraday_bars_15min', finerFrom],
    ['intraday_bars_5min', finerFrom],
  ] as const) {
    const t = performance.now();
    await sql`call refresh_continuous_aggregate(${rollup}, ${from}::timestamptz, ${to}::timestamptz)`;
    log(`growth: ${rollup} materialised from ${from?.toISOString() ?? 'the start'} in ${seconds(t)} s`);
  }
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from intraday_bars_1hour`;
  return { rows: n, seconds: seconds(started), statements: 4 };
}

/** Compresses every chunk of `table` that ends on or before `before`: the history older than the read window. */
export async function compressBefore(sql: ISql, table: string, before: string): Promise<{ chunks: number; seconds: number }> {
  const started = performance.now();
  const chunks = await sql<{ chunk: string }[]>`
    select format('%I.%I', chunk_schema, chunk_name) as chunk
    from timescaledb_information.chunks
    where hypertable_name = ${table} and range_end <= ${before}::timestamptz and not is_compressed
    order by range_start
  `;
  for (const { chunk } of chunks) await sql`select compress_chunk(${chunk}::regclass)`;
  return { chunks: chunks.length, seconds: seconds(started) };
}

/** The scheduled jobs (compression and rollup-refresh policies), paused so nothing changes a database while it is read. */
export async function pauseJobs(sql: ISql): Promise<string[]> {
  const rows = await sql<{ job: string }[]>`
    select format('%s on %s (%s)', application_name, hypertable_name, coalesce(config::text, '')) as job
    from timescaledb_information.jobs
    where job_id >= 1000
    order by job_id
  `;
  await sql`select alter_job(job_id, scheduled => false) from timescaledb_information.jobs where job_id >= 1000`;
  return rows.map((r) => r.job);
}

const MB = (bytes: string | number | null) => (bytes === null ? null : round(Number(bytes) / 2 ** 20, 1));

/** What a database holds: each bar table's rows, chunks and size (compressed chunks included), each rollup's size, and the database's. */
export async function storage(sql: ISql) {
  const tables = await sql<{ table: string; chunks: number; compressed: number; bytes: string; before: string | null; after: string | null }[]>`
    select h.hypertable_name as table,
      (select count(*)::int from timescaledb_information.chunks c where c.hypertable_name = h.hypertable_name) as chunks,
      (select count(*)::int from timescaledb_information.chunks c where c.hypertable_name = h.hypertable_name and c.is_compressed) as compressed,
      hypertable_size(format('%I.%I', h.hypertable_schema, h.hypertable_name)::regclass) as bytes,
      s.before_compression_total_bytes as before, s.after_compression_total_bytes as after
    from timescaledb_information.hypertables h
    left join lateral hypertable_compression_stats(format('%I.%I', h.hypertable_schema, h.hypertable_name)::regclass) s on true
    where h.hypertable_name in ('daily_bars', 'intraday_bars')
    order by 1
  `;
  const rollups = await sql<{ view: string; bytes: string }[]>`
    select view_name as view, hypertable_size(format('%I.%I', materialization_hypertable_schema, materialization_hypertable_name)::regclass) as bytes
    from timescaledb_information.continuous_aggregates
    order by view_name
  `;
  const [{ db, revisions }] = await sql<{ db: string; revisions: string }[]>`
    select pg_database_size(current_database()) as db,
      pg_total_relation_size('daily_bar_revisions') + pg_total_relation_size('intraday_bar_revisions') as revisions
  `;
  const [{ daily, minutes, dailyRevisions, minuteRevisions }] = await sql<
    { daily: number; minutes: number; dailyRevisions: number; minuteRevisions: number }[]
  >`
    select (select count(*)::int from daily_bars) as daily, (select count(*)::int from intraday_bars) as minutes,
      (select count(*)::int from daily_bar_revisions) as "dailyRevisions", (select count(*)::int from intraday_bar_revisions) as "minuteRevisions"
  `;
  const rowsOf: Record<string, number> = { daily_bars: daily, intraday_bars: minutes };
  return {
    tables: Object.fromEntries(
      tables.map((t) => [
        t.table,
        {
          rows: rowsOf[t.table],
          chunks: t.chunks,
          compressedChunks: t.compressed,
          sizeMb: MB(t.bytes),
          compressedChunksBeforeMb: MB(t.before),
          compressedChunksAfterMb: MB(t.after),
        },
      ]),
    ),
    rollupsMb: Object.fromEntries(rollups.map((r) => [r.view, MB(r.bytes)])),
    revisions: { daily: dailyRevisions, minute: minuteRevisions, sizeMb: MB(revisions) },
    databaseMb: MB(db),
  };
}
