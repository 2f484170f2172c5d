import type { ISql } from '../db/sql.ts';
import { timed } from '../db/sql.ts';
import { stagedUpsert } from '../ingest/repository.ts';
import type { StagingColumns, WriteCounts } from '../ingest/kind.ts';
import { INTERVAL_MINUTES } from './schema.ts';

const MINUTE_MS = 60_000;

export async function existingInstruments(sql: ISql, ids: string[]): Promise<Map<string, { quoteCurrency: string | null }>> {
  const rows = await timed(
    'existing_instruments',
    sql<{ id: string; quote_currency: string | null }[]>`
      select id, quote_currency
      from instruments
      where id = any (${ids}::uuid[])
    `,
  );
  return new Map(rows.map((r) => [r.id, { quoteCurrency: r.quote_currency }]));
}

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

/**
 * Upserts the staged batch into `table`, keyed by (instrument_id, the time
 * column). A stored row is rewritten only when some value differs, so an
 * unchanged re-post writes nothing; the counts tell inserted from updated.
 */
export async function upsertStagedBars(tx: ISql, table: 'daily_bars' | 'intraday_bars', columns: StagingColumns): Promise<WriteCounts> {
  const [instrumentId, time, ...values] = columnNames(columns);
  const upsert = stagedUpsert(tx, { table, key: [instrumentId, time], updated: values, setsUpdatedAt: false });
  const [row] = await tx<{ inserted: number; updated: number }[]>`
    with upserted as (${upsert})
    select count(*) filter (where inserted)::int as inserted, count(*) filter (where not inserted)::int as updated
    from upserted
  `;
  return { inserted: row.inserted, updated: row.updated };
}

const ROLLUPS = (['5min', '15min', '30min', '1hour'] as const).map((interval) => ({
  table: INTRADAY_TABLES[interval],
  width: `${INTERVAL_MINUTES[interval]} minutes`,
  ms: INTERVAL_MINUTES[interval] * MINUTE_MS,
}));

// Bucket origin: a Monday midnight UTC, the same as TimescaleDB's time_bucket
// default, so both tiers cut identical buckets.
const BUCKET_ORIGIN = '2000-01-03T00:00:00Z';

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
  for (const { table, width, ms } of ROLLUPS) {
    const lo = new Date(origin + Math.floor((firstMinute * MINUTE_MS - origin) / ms) * ms);
    // The last minute of the last touched bucket, not the instant the bucket
    // ends: for the bucket that ends year 9999 that instant is in year 10000,
    // which a Date sends as "+010000-01-01T00:00:00.000Z" and PostgreSQL
    // refuses. Stored bars are whole minutes (the row schema), so `<=` this
    // selects exactly what `<` the end would, and the bound stays a constant.
    const hi = new Date(origin + (Math.floor((lastMinute * MINUTE_MS - origin) / ms) + 1) * ms - MINUTE_MS);
    const bucket = (column: string) => tx`date_bin(${width}::interval, ${tx(column)}, ${BUCKET_ORIGIN}::timestamptz)`;
    await tx`
      insert into ${tx(table)} as r (instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume,
        quote_currency, quote_unit, source, as_of)
      select
        m.instrument_id,
        ${bucket('bar_ts')},
        (array_agg(m.open_price order by m.bar_ts))[1],
        max(m.high_price),
        min(m.low_price),
        (array_agg(m.close_price order by m.bar_ts desc))[1],
        case when count(m.volume) = count(*) then sum(m.volume) end,
        (array_agg(m.quote_currency order by m.bar_ts desc))[1],
        (array_agg(m.quote_unit order by m.bar_ts desc))[1],
        (array_agg(m.source order by m.bar_ts desc))[1],
        max(m.as_of)
      from intraday_bars m
      where m.bar_ts >= ${lo} and m.bar_ts <= ${hi}
        and (m.instrument_id, ${bucket('bar_ts')}) in (select instrument_id, ${bucket('bar_ts')} from ingest_staging)
      group by 1, 2
      on conflict (instrument_id, bar_ts) do update set
        open_price = excluded.open_price,
        high_price = excluded.high_price,
        low_price = excluded.low_price,
        close_price = excluded.close_price,
        volume = excluded.volume,
        quote_currency = excluded.quote_currency,
        quote_unit = excluded.quote_unit,
        source = excluded.source,
        as_of = excluded.as_of
    `;
  }
  await tx`set local enable_nestloop = on`;
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
