import type postgres from 'postgres';
import type { ISql } from '../db/sql.ts';
import { identifierList } from '../db/sql.ts';
import { writeStagedBars, type BarTable, type StagedSpan } from '../price-history/bars-repository.ts';
import type { StagingColumns, WriteCounts } from '../ingest/kind.ts';
import { INTERVAL_MINUTES } from './schema.ts';
import { barText, INTRADAY_BAR } from './bar-text-sql.ts';

const MINUTE_MS = 60_000;

export const INTRADAY_TABLES = {
  '1min': 'intraday_bars',
  '5min': 'intraday_bars_5min',
  '15min': 'intraday_bars_15min',
  '30min': 'intraday_bars_30min',
  '1hour': 'intraday_bars_1hour',
} as const;

export type Interval = keyof typeof INTRADAY_TABLES;

// Ingest: statements over the `ingest_staging` table of a bar upload
// (prices/ingest.ts), inside its transaction.

/** intraday_bars' columns in COPY order, with their staging types; the staging table and the upsert both come from this (daily_bars': DAILY_COLUMNS, price-history/bars-repository.ts). */
export const INTRADAY_COLUMNS: StagingColumns = [
  ['instrument_id', 'uuid'],
  ['bar_ts', 'timestamptz'],
  ['open_price', 'float8'],
  ['high_price', 'float8'],
  ['low_price', 'float8'],
  ['close_price', 'float8'],
  ['volume', 'float8'],
  ['quote_currency', 'text'],
  ['quote_unit', 'text'],
  ['source', 'text'],
  ['as_of', 'timestamptz'],
];
export const columnNames = (columns: StagingColumns) => columns.map(([name]) => name);

/** intraday_bars' column names, which its rollups have too (a rollup bar's asOf is the latest knowledge time of its minutes). */
export const INTRADAY_NAMES = columnNames(INTRADAY_COLUMNS);

/**
 * Writes the staged intraday batch with writeStagedBars, keeping each stored
 * 1-minute bar a changed one replaces in intraday_bar_revisions (sql/019, sql/022)
 * with the instant it became known, so a read with asOf finds it.
 */
export async function writeStagedIntradayBars(tx: ISql, batch: StagedSpan): Promise<WriteCounts> {
  const { inserted, updated } = await writeStagedBars(tx, INTRADAY_TABLE, batch, {
    keep: (kept) => tx`
      insert into intraday_bar_revisions (instrument_id, bar_ts, ${identifierList(tx, kept)})
      select instrument_id, bar_ts, ${identifierList(
        tx,
        kept.map((c) => `stored_${c}`),
      )}
      from changed
      where not absent
      order by instrument_id, bar_ts
      returning instrument_id
    `,
  });
  return { inserted, updated };
}

const INTRADAY_TABLE: BarTable = { table: 'intraday_bars', time: 'bar_ts', timeType: 'timestamptz', field: 'barTimestamp', columns: INTRADAY_COLUMNS };

const ROLLUPS = (['5min', '15min', '30min', '1hour'] as const).map((interval) => ({
  interval,
  table: INTRADAY_TABLES[interval],
  width: `${INTERVAL_MINUTES[interval]} minutes`,
  ms: INTERVAL_MINUTES[interval] * MINUTE_MS,
}));

// Bucket origin: a Monday midnight UTC, the same as TimescaleDB's time_bucket
// default, so both tiers cut identical buckets.
const BUCKET_ORIGIN = '2000-01-03T00:00:00Z';

const bucketOf = (sql: ISql, width: string, column: string) => sql`date_bin(${width}::interval, ${sql(column)}, ${BUCKET_ORIGIN}::timestamptz)`;

/**
 * The `interval` buckets of the 1-minute bars `minutes` (a relation with
 * intraday_bars' columns), with INTRADAY_NAMES: open first, high max, low
 * min, close last, volume the sum when every minute has one, the quote and
 * source of the last minute, the latest asOf; `where` (over alias m) picks
 * the minutes. The continuous aggregates of full TimescaleDB (sql/002) are
 * defined the same way, with time_bucket on the same origin.
 */
export function rollupOf(sql: ISql, minutes: postgres.Fragment, interval: Exclude<Interval, '1min'>, where?: postgres.Fragment): postgres.Fragment {
  const width = `${INTERVAL_MINUTES[interval]} minutes`;
  return sql`(
    select
      m.instrument_id,
      ${bucketOf(sql, width, 'bar_ts')} as bar_ts,
      (array_agg(m.open_price order by m.bar_ts))[1] as open_price,
      max(m.high_price) as high_price,
      min(m.low_price) as low_price,
      (array_agg(m.close_price order by m.bar_ts desc))[1] as close_price,
      case when count(m.volume) = count(*) then sum(m.volume) end as volume,
      (array_agg(m.quote_currency order by m.bar_ts desc))[1] as quote_currency,
      (array_agg(m.quote_unit order by m.bar_ts desc))[1] as quote_unit,
      (array_agg(m.source order by m.bar_ts desc))[1] as source,
      max(m.as_of) as as_of
    from ${minutes} m
    ${where ? sql`where ${where}` : sql``}
    group by 1, 2
  )`;
}

/**
 * Recomputes every rollup bucket the batch touched, from the stored 1-minute
 * bars (not just the batch), so a correction or a partial bucket is right.
 *
 * One pass over the stored minutes between the batch's first and last whole
 * bucket (constants, so only those chunks are read), kept to the touched
 * (instrument, bucket) pairs by a hash semi-join on equality. A join on the
 * bucket range instead degenerates into comparing every stored minute of an
 * instrument with every touched bucket (24 s for a 20-day batch, measured).
 */
export async function refreshRollups(tx: ISql, firstMinute: number, lastMinute: number) {
  const origin = Date.parse(BUCKET_ORIGIN);
  // The semi-join must be hashed. With statistics that lag a fast-growing
  // table the planner can pick a nested loop that rescans the staged batch for
  // every stored minute: measured once at 96 s for a monthly upload that
  // otherwise takes 2 s. Only for these statements; restored below.
  await tx`set local enable_nestloop = off`;
  // The touched days, whole, the same for every rollup: from the first minute's UTC midnight to the last minute of the last minute's day.
  const dayLo = new Date(Math.floor(firstMinute / DAY_MINUTES) * DAY_MS);
  const dayHi = new Date((Math.floor(lastMinute / DAY_MINUTES) + 1) * DAY_MS - MINUTE_MS);
  const touchedDays = tx`r.bar_ts >= ${dayLo} and r.bar_ts <= ${dayHi} and (r.instrument_id, ${utcDay(tx, tx`r.bar_ts`)}) in (select instrument_id, ${utcDay(tx, tx`bar_ts`)} from ingest_staging)`;
  for (const { interval, table, width, ms } of ROLLUPS) {
    const lo = new Date(origin + Math.floor((firstMinute * MINUTE_MS - origin) / ms) * ms);
    // The last minute of the last touched bucket, not the instant the bucket
    // ends: for the bucket that ends year 9999 that instant is in year 10000,
    // which a Date sends as "+010000-01-01T00:00:00.000Z" and PostgreSQL
    // refuses. Stored bars are whole minutes (the row schema), so `<=` this
    // selects exactly what `<` the end would, and the bound stays a constant.
    const hi = new Date(origin + (Math.floor((lastMinute * MINUTE_MS - origin) / ms) + 1) * ms - MINUTE_MS);
    await tx`
      insert into ${tx(table)} as r (${identifierList(tx, [...INTRADAY_NAMES, ...ROLLUP_TEXT_NAMES])})
      select ${identifierList(tx, INTRADAY_NAMES)}, ${rollupText(tx, 'b')}
      from ${rollupOf(tx, tx`intraday_bars`, interval, tx`m.bar_ts >= ${lo} and m.bar_ts <= ${hi} and (m.instrument_id, ${bucketOf(tx, width, 'bar_ts')}) in (select instrument_id, ${bucketOf(tx, width, 'bar_ts')} from ingest_staging)`)} b
      on conflict (instrument_id, bar_ts) do update set
        ${[...INTRADAY_NAMES.slice(2), ...ROLLUP_TEXT_NAMES].map((c, i) => tx`${i ? tx`, ` : tx``}${tx(c)} = excluded.${tx(c)}`)}
    `;
    await writeRollupDays(tx, interval, touchedDays);
  }
  await tx`set local enable_nestloop = on`;
}

const DAY_MINUTES = 1_440;
const DAY_MS = DAY_MINUTES * MINUTE_MS;

/** The UTC day of an instant. Rollup buckets start on the UTC midnight (BUCKET_ORIGIN) and are at most an hour long, so each lies within one day. */
const utcDay = (sql: ISql, instant: postgres.Fragment) => sql`(${instant} at time zone 'UTC')::date`;

/**
 * Writes intraday_rollup_days (sql/028) for the (instrument, UTC day) pairs
 * of `interval`'s rollup rows that `where` picks (over alias r), whole days:
 * the bars' JSON objects joined by commas in time order, their distinct
 * sources and their latest asOf. A row stored without its text gets it
 * written here from its numbers, as a read would.
 */
async function writeRollupDays(tx: ISql, interval: Exclude<Interval, '1min'>, where: postgres.Fragment) {
  const json = barText(tx, 'json', INTRADAY_BAR, (name) => tx`r.${tx(name)}`, null);
  await tx`
    insert into intraday_rollup_days (instrument_id, rollup, day, bars_json, sources, latest_as_of)
    select
      r.instrument_id, ${interval}, ${utcDay(tx, tx`r.bar_ts`)},
      string_agg(coalesce(r.bar_json, ${json}), ',' order by r.bar_ts),
      array_to_json(array_agg(distinct r.source))::text,
      max(r.as_of)
    from ${tx(INTRADAY_TABLES[interval])} r
    where ${where}
    group by r.instrument_id, ${utcDay(tx, tx`r.bar_ts`)}
    on conflict (instrument_id, rollup, day) do update set
      bars_json = excluded.bars_json, sources = excluded.sources, latest_as_of = excluded.latest_as_of
  `;
}

/** Writes intraday_rollup_days (sql/028) for every stored rollup day: the data step of the migration that makes the table. */
export async function fillRollupDays(sql: ISql): Promise<void> {
  for (const { interval } of ROLLUPS) await writeRollupDays(sql, interval, sql`true`);
}

/**
 * The rollup tables' response-text columns (sql/026): each bar's JSON object
 * and CSV row, as the price reads write them, the CSV row without its symbol
 * cell: the symbol is the instrument's on the bar's day, which a later upload
 * of its symbol periods can change, so the read puts it in
 * (intraday-text-repository.ts).
 */
export const ROLLUP_TEXT_COLUMNS = { json: 'bar_json', csv: 'bar_csv' } as const;
const ROLLUP_TEXT = Object.entries(ROLLUP_TEXT_COLUMNS) as ['json' | 'csv', string][];
const ROLLUP_TEXT_NAMES = ROLLUP_TEXT.map(([, column]) => column);

/** A rollup bar's texts, from the columns of `alias`, in ROLLUP_TEXT_NAMES' order. */
const rollupText = (sql: ISql, alias: string) =>
  sql`${ROLLUP_TEXT.map(([format], i) => sql`${i ? sql`, ` : sql``}${barText(sql, format, INTRADAY_BAR, (name) => sql`${sql(alias)}.${sql(name)}`, null)}`)}`;

/**
 * Writes the response text of every rollup bar stored without it (the rows
 * of a database migrated to sql/026); the tables of full TimescaleDB are
 * continuous aggregates, without the columns.
 */
export async function fillRollupText(sql: ISql): Promise<void> {
  for (const { table } of ROLLUPS) {
    await sql`
      update ${sql(table)} r set (${identifierList(sql, ROLLUP_TEXT_NAMES)}) = (select ${rollupText(sql, 'r')})
      where r.bar_json is null or r.bar_csv is null
    `;
  }
}

/**
 * Re-materialises the continuous aggregates (full TimescaleDB) over whole
 * hours from `first` to the end of `lastHour`. The end is added in SQL: after
 * the last hour of year 9999 it is in year 10000, which a Date cannot send
 * (see refreshRollups). A refresh cannot run inside a transaction.
 */
export async function refreshContinuousAggregates(sql: ISql, first: Date, lastHour: Date): Promise<void> {
  for (const { table } of ROLLUPS) {
    await sql`call refresh_continuous_aggregate(${table}, ${first}, ${lastHour}::timestamptz + interval '1 hour')`;
  }
}
