import { z } from 'zod';
import { BooleanValue, FiniteNumber, NonNegativeNumber, PositiveNumber, rejectFirstRow, rejectUnknownInstruments, type IngestKind, type IngestResult } from '../admin/ingest.ts';
import type { Sql } from '../db/sql.ts';
import { DateSchema, InstantSchema, UuidSchema } from '../http/params.ts';
import { INTRADAY_TABLES } from './repository.ts';

const nullable = <T extends z.ZodType>(schema: T) => schema.nullable().optional().transform((v) => v ?? null);

const barFields = {
  instrumentId: UuidSchema,
  openPrice: nullable(PositiveNumber),
  highPrice: nullable(PositiveNumber),
  lowPrice: nullable(PositiveNumber),
  closePrice: PositiveNumber,
  volume: nullable(NonNegativeNumber),
  quoteCurrency: z.string().regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code'),
  quoteUnit: z.string().trim().min(1).max(50),
  source: z.string().trim().min(1).max(200),
  asOf: InstantSchema.describe('when the source published or we captured this bar'),
};

type OhlcRow = { openPrice: number | null; highPrice: number | null; lowPrice: number | null; closePrice: number };

function checkOhlc(row: OhlcRow, ctx: z.RefinementCtx) {
  const { openPrice: o, highPrice: h, lowPrice: l, closePrice: c } = row;
  const inside = [o, c].filter((v): v is number => v !== null);
  if (h !== null && inside.some((v) => v > h)) ctx.addIssue({ code: 'custom', path: ['highPrice'], message: 'must be at least open and close' });
  if (l !== null && inside.some((v) => v < l)) ctx.addIssue({ code: 'custom', path: ['lowPrice'], message: 'must be at most open and close' });
  if (h !== null && l !== null && l > h) ctx.addIssue({ code: 'custom', path: ['lowPrice'], message: 'must not exceed highPrice' });
}

export const DailyBarRowSchema = z
  .strictObject({
    ...barFields,
    barDate: DateSchema,
    stale: BooleanValue.default(false),
    priceBasis: z.enum(['raw', 'vendor_adjusted']).default('raw').describe('vendor_adjusted: the source already applied actions'),
    reflectsActionsThrough: nullable(DateSchema).describe('for vendor_adjusted bars: the last action effective date the source reflects'),
  })
  .superRefine((row, ctx) => {
    checkOhlc(row, ctx);
    if ((row.priceBasis === 'vendor_adjusted') !== (row.reflectsActionsThrough !== null)) {
      ctx.addIssue({ code: 'custom', path: ['reflectsActionsThrough'], message: 'required exactly when priceBasis is vendor_adjusted' });
    }
  });

export const IntradayBarRowSchema = z
  .strictObject({
    ...barFields,
    openPrice: PositiveNumber,
    highPrice: PositiveNumber,
    lowPrice: PositiveNumber,
    barTimestamp: InstantSchema.refine((s) => new Date(s).getTime() % 60_000 === 0, 'must be on a whole minute (1-minute bars only)'),
  })
  .superRefine(checkOhlc);

export type DailyBarRow = z.infer<typeof DailyBarRowSchema>;
export type IntradayBarRow = z.infer<typeof IntradayBarRowSchema>;

async function rejectDuplicates(tx: Sql, keyColumn: string, field: string) {
  await rejectFirstRow(
    tx`
      select row_index
      from (
        select row_index, row_number() over (partition by instrument_id, ${tx(keyColumn)} order by row_index) as k
        from ingest_staging
      ) d
      where k > 1
      order by row_index
      limit 1
    `,
    field,
    'duplicates an earlier row of this batch',
  );
}

function counted(row: Record<string, unknown>): IngestResult {
  const rows = row.rows as number;
  const inserted = row.inserted as number;
  const updated = row.updated as number;
  return { rows, inserted, updated, unchanged: rows - inserted - updated };
}

export const dailyBarIngest: IngestKind<DailyBarRow> = {
  label: 'daily bars',
  rowSchema: DailyBarRowSchema,
  stagingColumns: `instrument_id uuid, bar_date date, open_price float8, high_price float8, low_price float8, close_price float8,
    volume float8, quote_currency text, quote_unit text, stale boolean, price_basis text, reflects_actions_through date, source text, as_of timestamptz`,
  toStagingValues: (r) => [
    r.instrumentId.toLowerCase(), r.barDate, r.openPrice, r.highPrice, r.lowPrice, r.closePrice, r.volume,
    r.quoteCurrency, r.quoteUnit, r.stale, r.priceBasis, r.reflectsActionsThrough, r.source, r.asOf,
  ],
  async apply(tx) {
    await rejectUnknownInstruments(tx);
    await rejectDuplicates(tx, 'bar_date', 'barDate');
    const [row] = await tx`
      with upserted as (
        insert into daily_bars as b (instrument_id, bar_date, open_price, high_price, low_price, close_price, volume,
          quote_currency, quote_unit, stale, price_basis, reflects_actions_through, source, as_of)
        select instrument_id, bar_date, open_price, high_price, low_price, close_price, volume,
          quote_currency, quote_unit, stale, price_basis, reflects_actions_through, source, as_of
        from ingest_staging
        on conflict (instrument_id, bar_date) do update set
          open_price = excluded.open_price,
          high_price = excluded.high_price,
          low_price = excluded.low_price,
          close_price = excluded.close_price,
          volume = excluded.volume,
          quote_currency = excluded.quote_currency,
          quote_unit = excluded.quote_unit,
          stale = excluded.stale,
          price_basis = excluded.price_basis,
          reflects_actions_through = excluded.reflects_actions_through,
          source = excluded.source,
          as_of = excluded.as_of
        where (b.open_price, b.high_price, b.low_price, b.close_price, b.volume, b.quote_currency, b.quote_unit,
               b.stale, b.price_basis, b.reflects_actions_through, b.source, b.as_of)
          is distinct from
              (excluded.open_price, excluded.high_price, excluded.low_price, excluded.close_price, excluded.volume,
               excluded.quote_currency, excluded.quote_unit, excluded.stale, excluded.price_basis,
               excluded.reflects_actions_through, excluded.source, excluded.as_of)
        returning (xmax = 0) as inserted
      )
      select
        (select count(*)::int from ingest_staging) as rows,
        count(*) filter (where inserted)::int as inserted,
        count(*) filter (where not inserted)::int as updated
      from upserted
    `;
    return counted(row);
  },
};

const ROLLUPS = (['5min', '15min', '30min', '1hour'] as const).map((interval) => ({
  table: INTRADAY_TABLES[interval],
  width: { '5min': '5 minutes', '15min': '15 minutes', '30min': '30 minutes', '1hour': '1 hour' }[interval],
}));

// Bucket origin: a Monday midnight UTC, the same as TimescaleDB's time_bucket
// default, so both tiers cut identical buckets.
const BUCKET_ORIGIN = '2000-01-03T00:00:00Z';

async function storageTier(sql: Sql): Promise<string> {
  const [row] = await sql`select tier from storage_tier`;
  return row.tier as string;
}

/**
 * Recomputes every rollup bucket the batch touched, from the stored 1-minute
 * bars (not just the batch), so a correction or a partial bucket is right.
 */
async function refreshRollups(tx: Sql) {
  for (const { table, width } of ROLLUPS) {
    await tx`
      with touched as (
        select distinct instrument_id, date_bin(${width}::interval, bar_ts, ${BUCKET_ORIGIN}::timestamptz) as bucket
        from ingest_staging
      )
      insert into ${tx(table)} as r (instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume,
        quote_currency, quote_unit, source, as_of)
      select
        m.instrument_id,
        t.bucket,
        (array_agg(m.open_price order by m.bar_ts))[1],
        max(m.high_price),
        min(m.low_price),
        (array_agg(m.close_price order by m.bar_ts desc))[1],
        case when count(m.volume) = count(*) then sum(m.volume) end,
        (array_agg(m.quote_currency order by m.bar_ts desc))[1],
        (array_agg(m.quote_unit order by m.bar_ts desc))[1],
        (array_agg(m.source order by m.bar_ts desc))[1],
        max(m.as_of)
      from touched t
      join intraday_bars m
        on m.instrument_id = t.instrument_id
       and m.bar_ts >= t.bucket
       and m.bar_ts < t.bucket + ${width}::interval
      group by m.instrument_id, t.bucket
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
}

export const intradayBarIngest: IngestKind<IntradayBarRow> = {
  label: 'intraday bars',
  rowSchema: IntradayBarRowSchema,
  stagingColumns: `instrument_id uuid, bar_ts timestamptz, open_price float8, high_price float8, low_price float8, close_price float8,
    volume float8, quote_currency text, quote_unit text, source text, as_of timestamptz`,
  toStagingValues: (r) => [
    r.instrumentId.toLowerCase(), r.barTimestamp, r.openPrice, r.highPrice, r.lowPrice, r.closePrice, r.volume,
    r.quoteCurrency, r.quoteUnit, r.source, r.asOf,
  ],
  async apply(tx) {
    await rejectUnknownInstruments(tx);
    await rejectDuplicates(tx, 'bar_ts', 'barTimestamp');
    const [row] = await tx`
      with upserted as (
        insert into intraday_bars as b (instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume,
          quote_currency, quote_unit, source, as_of)
        select instrument_id, bar_ts, open_price, high_price, low_price, close_price, volume,
          quote_currency, quote_unit, source, as_of
        from ingest_staging
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
        where (b.open_price, b.high_price, b.low_price, b.close_price, b.volume, b.quote_currency, b.quote_unit, b.source, b.as_of)
          is distinct from
              (excluded.open_price, excluded.high_price, excluded.low_price, excluded.close_price, excluded.volume,
               excluded.quote_currency, excluded.quote_unit, excluded.source, excluded.as_of)
        returning (xmax = 0) as inserted
      )
      select
        (select count(*)::int from ingest_staging) as rows,
        count(*) filter (where inserted)::int as inserted,
        count(*) filter (where not inserted)::int as updated
      from upserted
    `;
    const [range] = await tx`select min(bar_ts) as first, max(bar_ts) as last from ingest_staging`;
    // Full TimescaleDB keeps the rollups as continuous aggregates, refreshed after commit.
    if ((await storageTier(tx)) !== 'timescaledb') await refreshRollups(tx);
    return { ...counted(row), firstBarTimestamp: (range.first as Date).toISOString(), lastBarTimestamp: (range.last as Date).toISOString() };
  },
  async afterCommit(sql, result) {
    if ((await storageTier(sql)) !== 'timescaledb') return;
    // A continuous aggregate refresh cannot run inside a transaction. Real-time
    // aggregation already serves unmaterialised buckets; this re-materialises
    // buckets a correction touched.
    // Whole hours, a boundary of every rollup width, so no touched bucket is cut off.
    const hour = 3_600_000;
    const first = new Date(Math.floor(Date.parse(result.firstBarTimestamp as string) / hour) * hour);
    const last = new Date((Math.floor(Date.parse(result.lastBarTimestamp as string) / hour) + 1) * hour);
    for (const { table } of ROLLUPS) {
      await sql`call refresh_continuous_aggregate(${table}, ${first}, ${last})`;
    }
  },
};
