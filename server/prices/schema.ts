import { SERIES_RULE, SERIES_STALE_REASONS, staleMetaFields } from '../core/freshness.ts';
import { z } from 'zod';
import { instrumentIdListSchema } from '../core/ids.ts';
import { BooleanFlagSchema, closedEnum, FormatSchema, whenParsed } from '../core/params.ts';
import { AsOfSchema, DateSchema } from '../core/time.ts';
import { ProvenanceCountsSchema } from '../price-history/schema.ts';
import { EMPTY_REASONS } from './daily-bars.ts';

export const MAX_BULK_INSTRUMENTS = 500;
// One request may span at most this many calendar days: 30 years of daily
// bars is ~7,560 rows per instrument, 3.8 million for a full bulk request,
// streamed with bounded memory. Longer histories are read in pieces.
export const MAX_SPAN_DAYS = 30 * 366;
export const INTERVALS = ['1min', '5min', '15min', '30min', '1hour'] as const;
/** Each interval's bar width in minutes. */
export const INTERVAL_MINUTES: Record<(typeof INTERVALS)[number], number> = { '1min': 1, '5min': 5, '15min': 15, '30min': 30, '1hour': 60 };
export const INTRADAY_ASSET_CLASSES = ['equity', 'etf', 'index', 'crypto'] as const;
// Intraday spans are capped per interval so one response stays under about
// 53,000 bars even for a 24-hour market (31 days of 1-minute bars is 44,640).
export const MAX_INTRADAY_SPAN_DAYS: Record<(typeof INTERVALS)[number], number> = {
  '1min': 31,
  '5min': 183,
  '15min': 366,
  '30min': 732,
  '1hour': 1464,
};

const spanDays = (from: string, to: string) => (Date.parse(to) - Date.parse(from)) / 86_400_000;

/**
 * `to` on or after `from`, and at most `maxDays` after it (`what`, such as
 * " for 1min bars", says whose limit that is); the span is left unchecked
 * without `maxDays` (an interval that is itself wrong). Run
 * whenParsed('from', 'to'): a bad date is reported as itself.
 */
export function dateRange(q: { from: string; to: string }, ctx: z.RefinementCtx, maxDays: number | undefined, what = '') {
  if (q.from > q.to) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be on or after from' });
  else if (maxDays !== undefined && spanDays(q.from, q.to) > maxDays)
    ctx.addIssue({ code: 'custom', path: ['to'], message: `the range may span at most ${maxDays} days${what}` });
}

const adjustmentParams = {
  from: DateSchema.describe('first session date, inclusive'),
  to: DateSchema.describe('last session date, inclusive'),
  adjusted: BooleanFlagSchema.default(false),
  asOf: AsOfSchema.optional(),
  includeBackfilled: BooleanFlagSchema.default(false),
};

export const DailyPricesQuerySchema = z
  .strictObject({
    ...adjustmentParams,
    actionSetVersion: z.coerce
      .number({ error: 'must be an integer' })
      .int('must be an integer')
      .min(0)
      .optional()
      .describe('pin the adjustment to this action-set version (beyond the spec)'),
    format: FormatSchema,
  })
  .superRefine((q, ctx) => dateRange(q, ctx, MAX_SPAN_DAYS), whenParsed('from', 'to'));

export const BulkPricesQuerySchema = z
  .strictObject({
    instrumentIds: instrumentIdListSchema(MAX_BULK_INSTRUMENTS),
    ...adjustmentParams,
    format: FormatSchema,
  })
  .superRefine((q, ctx) => dateRange(q, ctx, MAX_SPAN_DAYS), whenParsed('from', 'to'));

export const IntradayQuerySchema = z
  .strictObject({
    from: DateSchema,
    to: DateSchema,
    interval: closedEnum(INTERVALS),
    asOf: AsOfSchema.optional().describe(
      'point-in-time cut-off: each 1-minute bar as it was known at that instant (a date means the end of that day), rolled up at read for coarser intervals',
    ),
    format: FormatSchema,
  })
  .superRefine(
    (q, ctx) => dateRange(q, ctx, Object.hasOwn(MAX_INTRADAY_SPAN_DAYS, q.interval) ? MAX_INTRADAY_SPAN_DAYS[q.interval] : undefined),
    whenParsed('from', 'to'),
  );

export type DailyPricesQuery = z.infer<typeof DailyPricesQuerySchema>;
export type BulkPricesQuery = z.infer<typeof BulkPricesQuerySchema>;

const PriceSchema = z.number().describe('in quoteUnit of quoteCurrency');

export const DailyBarSchema = z
  .strictObject({
    barDate: z.string().describe('session date yyyy-mm-dd'),
    openPrice: PriceSchema.nullable(),
    highPrice: PriceSchema.nullable(),
    lowPrice: PriceSchema.nullable(),
    closePrice: PriceSchema,
    volume: z.number().nullable().describe('shares (adjusted by split factors when adjusted=true); null when the source has none'),
    quoteCurrency: z.string(),
    quoteUnit: z.string(),
    stale: z.boolean(),
    asOf: z
      .string()
      .describe(
        'when this revision of the bar became known: the asOf its source stated at ingest, else the instant its upload began. On a read with asOf, at most that cut-off',
      ),
    source: z.string(),
  })
  .meta({ id: 'DailyBar' });

const PriceBasisSchema = z.strictObject({
  priceBasis: z.enum(['raw', 'adjusted', 'vendor_adjusted', 'mixed']),
  adjustedThrough: z.string().nullable().describe('the cut-off of the actions applied; null for raw prices'),
  actionsApplied: z.int().min(0),
  actionsAlreadyReflected: z.int().min(0).describe('actions a vendor-adjusted bar already reflects, not applied again'),
  actionsNotApplied: z.array(
    z.strictObject({
      actionId: z.string(),
      reason: z.enum(['invalid_params', 'no_prior_close', 'prior_close_gap', 'currency_mismatch', 'not_a_price_action']),
    }),
  ),
});

const ActionCoverageSchema = z.strictObject({
  checked: z.boolean(),
  lastCheckedAt: z.string().nullable(),
  source: z.string().nullable(),
  coveredFrom: z.string().nullable(),
  actionsFound: z.int().min(0).nullable(),
  coversSeries: z.boolean(),
  gap: z.enum(['none', 'never_checked', 'starts_after_series']),
});

const priceMeta = {
  asOf: z.string().describe('the asOf asked for, else when the answer was read'),
  source: z.string().describe("the bars' sources, comma-separated; none when there are no bars"),
  ...staleMetaFields(SERIES_STALE_REASONS, SERIES_RULE),
  adjusted: z.boolean(),
  includeBackfilled: z.boolean(),
  provenance: ProvenanceCountsSchema,
};

const EmptyReasonSchema = z
  .enum(EMPTY_REASONS)
  .describe(
    'why the window has no bar: no_stored_bars (none is stored in it), not_yet_known (bars are stored, but none was known at asOf: each bar reads as known from its asOf), not_in_version (the pinned actionSetVersion holds none)',
  );

export const DailyPricesMetaSchema = z.strictObject({
  ...priceMeta,
  emptyReason: EmptyReasonSchema.nullable().describe('null when data holds bars; else why it holds none'),
  actionSetVersion: z.int().min(0),
  actionSetVersionPinned: z.boolean(),
  priceBasis: PriceBasisSchema,
  actionCoverage: ActionCoverageSchema,
});

export const BulkPricesDataSchema = z.record(z.string(), z.array(DailyBarSchema)).describe('instrument id → its bars; unknown ids are absent');

const SymbolRunSchema = z
  .strictObject({
    symbol: z.string().nullable().describe('the symbol; null for days before the instrument had one'),
    from: z.string().describe('first day of the run, yyyy-mm-dd'),
    to: z.string().describe('last day of the run, yyyy-mm-dd, inclusive'),
  })
  .meta({ id: 'SymbolRun' });

export const BulkPricesMetaSchema = z.strictObject({
  ...priceMeta,
  emptyReasons: z
    .record(z.string(), EmptyReasonSchema)
    .describe('instrument id → why its array is empty, for each found instrument without bars in the window'),
  requested: z.int().min(1).max(MAX_BULK_INSTRUMENTS),
  found: z.int().min(0).max(MAX_BULK_INSTRUMENTS),
  actionSetVersions: z.record(z.string(), z.int().min(0)),
  priceBases: z.record(z.string(), PriceBasisSchema),
  actionCoverages: z.record(z.string(), ActionCoverageSchema),
  symbols: z
    .record(z.string(), z.array(SymbolRunSchema))
    .describe(
      "instrument id → its symbol as of each day of the window (from to to), as runs of days under one symbol in date order, for each instrument with bars: a bar's symbol is the run's holding its barDate. The CSV, Arrow and Parquet answers carry it per bar as their symbol column",
    ),
  actionCoverage: z.strictObject({ checked: z.boolean(), coversSeries: z.boolean(), actionsFound: z.int().min(0).nullable() }),
});

export const IntradayBarSchema = z.strictObject({
  barTimestamp: z.string().describe('start of the bucket, UTC'),
  openPrice: PriceSchema,
  highPrice: PriceSchema,
  lowPrice: PriceSchema,
  closePrice: PriceSchema,
  volume: z.number().nullable(),
  quoteCurrency: z.string(),
  quoteUnit: z.string(),
  source: z.string(),
});

export const IntradayMetaSchema = z.strictObject({
  asOf: z
    .string()
    .describe(
      'the asOf asked for; without one, the latest knowledge time of the bars returned (each 1-minute bar is known from its asOf, a rollup bar from its latest minute), or the time of reading when there are none',
    ),
  source: z.string(),
  ...staleMetaFields(
    ['series_behind', 'no_bars'],
    'the last 1-minute bar at or before the read’s instant (asOf, else the time of reading) is on a day before the last session completed then',
  ),
  emptyReason: z
    .enum(['no_stored_bars', 'not_yet_known'])
    .nullable()
    .describe(
      'null when data holds bars; else why it holds none: no_stored_bars (no 1-minute bar is stored in the window), not_yet_known (bars are stored, but none was known at asOf)',
    ),
  interval: z.enum(INTERVALS),
  adjusted: z.literal(false),
  from: z.string(),
  to: z.string(),
  bucketing: z.string(),
  readFrom: z
    .enum(['stored_minute_bars', 'stored_rollup', 'minute_bars_known_at_asof'])
    .describe(
      'where the bars came from: the stored 1-minute bars or rollup, or, for an asOf read, the 1-minute bars as known at asOf, bucketed at read exactly as the stored rollups are',
    ),
});
