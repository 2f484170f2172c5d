import { z } from 'zod';
import type { RawBar } from './adjustment.ts';
import { AsOfSchema, BooleanFlagSchema, DateSchema, idListSchema } from '../http/params.ts';

export const MAX_BULK_INSTRUMENTS = 500;
// One request may span at most this many calendar days: 30 years of daily
// bars is ~7,560 rows per instrument, 3.8 million for a full bulk request,
// streamed with bounded memory. Longer histories are read in pieces.
export const MAX_SPAN_DAYS = 30 * 366;
export const INTERVALS = ['1min', '5min', '15min', '30min', '1hour'] as const;
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

function dateRange<T extends { from: string; to: string }>(maxDays: number) {
  return (q: T, ctx: z.RefinementCtx) => {
    if (q.from > q.to) ctx.addIssue({ code: 'custom', path: ['to'], message: 'must be on or after from' });
    else if (spanDays(q.from, q.to) > maxDays) ctx.addIssue({ code: 'custom', path: ['to'], message: `the range may span at most ${maxDays} days` });
  };
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
  })
  .superRefine(dateRange(MAX_SPAN_DAYS));

export const BulkPricesQuerySchema = z
  .strictObject({
    instrumentIds: idListSchema(MAX_BULK_INSTRUMENTS),
    ...adjustmentParams,
  })
  .superRefine(dateRange(MAX_SPAN_DAYS));

export const IntradayQuerySchema = z
  .strictObject({
    from: DateSchema,
    to: DateSchema,
    interval: z.enum(INTERVALS, { error: `must be one of ${INTERVALS.join(', ')}` }),
  })
  .superRefine((q, ctx) => dateRange(MAX_INTRADAY_SPAN_DAYS[q.interval])(q, ctx));

export type DailyPricesQuery = z.infer<typeof DailyPricesQuerySchema>;
export type BulkPricesQuery = z.infer<typeof BulkPricesQuerySchema>;

/** A stored daily bar. */
export interface DailyBar extends RawBar {
  instrumentId: string;
  quoteCurrency: string;
  quoteUnit: string;
  stale: boolean;
  asOf: string;
  source: string;
}

/** A stored intraday bar: the public fields, then when the source published it. */
export interface IntradayBar {
  barTimestamp: string;
  openPrice: number;
  highPrice: number;
  lowPrice: number;
  closePrice: number;
  volume: number | null;
  quoteCurrency: string;
  quoteUnit: string;
  source: string;
  asOf: string;
}

/** The public bar: the spec's fields, in a fixed order so equal inputs give equal bytes. */
export function dailyBarJson(b: DailyBar): string {
  return (
    `{"barDate":"${b.barDate}","openPrice":${JSON.stringify(b.openPrice)},"highPrice":${JSON.stringify(b.highPrice)},` +
    `"lowPrice":${JSON.stringify(b.lowPrice)},"closePrice":${JSON.stringify(b.closePrice)},"volume":${JSON.stringify(b.volume)},` +
    `"quoteCurrency":${JSON.stringify(b.quoteCurrency)},"quoteUnit":${JSON.stringify(b.quoteUnit)},"stale":${b.stale},` +
    `"asOf":"${b.asOf}","source":${JSON.stringify(b.source)}}`
  );
}
