import { z } from 'zod';
import { instrumentIdListSchema } from '../core/ids.ts';
import { BooleanFlagSchema } from '../core/params.ts';
import { DateSchema } from '../core/time.ts';

/** The spec's cap on one read; 500 UUIDs fit the query string (server/runtime/lifecycle.ts). */
export const MAX_IV_INSTRUMENTS = 500;
export const MAX_AGE_DAYS = 30;

export const BulkImpliedVolatilityQuerySchema = z.strictObject({
  instrumentIds: instrumentIdListSchema(MAX_IV_INSTRUMENTS).describe('comma-separated instrument ids, 1 to 500 distinct; a repeated id counts once'),
  maxAgeDays: z.coerce
    .number({ error: 'must be an integer' })
    .int('must be an integer')
    .min(1, `must be between 1 and ${MAX_AGE_DAYS}`)
    .max(MAX_AGE_DAYS, `must be between 1 and ${MAX_AGE_DAYS}`)
    .default(5)
    .describe("an instrument's newest snapshot counts only when its asOfDate is on or after (today, or asOf) minus this many days"),
  includeTermStructure: BooleanFlagSchema.default(false).describe("adds each row's termStructure"),
  asOf: DateSchema.optional().describe(
    'beyond the spec, for reproducible reads: "today" becomes this day, and only snapshots dated on or before it count; omit for today (UTC) and every stored snapshot',
  ),
});
export type BulkImpliedVolatilityQuery = z.infer<typeof BulkImpliedVolatilityQuerySchema>;

const figure = (description: string) => z.number().nullable().describe(`${description}; null when the snapshot has none`);
const volatility = (description: string) => figure(`${description}, annualised, as a decimal`);

export const VolatilitySurfaceSchema = z.strictObject({
  impliedVolatility30d: volatility('30-day at-the-money implied volatility'),
  historicalVolatility30d: volatility('30-day close-to-close historical volatility'),
  parkinsonHistoricalVolatility30d: volatility('30-day Parkinson (high-low) historical volatility'),
  putCallIvRatio30d: figure('30-day put implied volatility over call implied volatility'),
  asOfDate: z.string().describe('the snapshot day'),
});

export const TermStructurePointSchema = z.strictObject({
  daysToExpiry: z.int().min(0).describe('calendar days from asOfDate to the expiry'),
  atmImpliedVolatility: volatility('at-the-money implied volatility of that expiry'),
});

export const ImpliedVolatilitySnapshotSchema = z
  .strictObject({
    instrumentId: z.string(),
    symbol: z.string().nullable().describe('the symbol in effect on asOfDate (a delisted instrument keeps its last); null when it had none'),
    atmImpliedVolatility: volatility('the most recent 30-day at-the-money implied volatility'),
    underlyingPrice: figure("the underlying's price on asOfDate"),
    asOfDate: z.string().describe("this instrument's newest snapshot day"),
    volatilitySurface: VolatilitySurfaceSchema,
    termStructure: z.array(TermStructurePointSchema).optional().describe('only with includeTermStructure=true: one point per expiry, nearest first'),
    source: z.string().describe('where the snapshot came from: an ingest source, or the derivation that produced it'),
  })
  .meta({ id: 'ImpliedVolatilitySnapshot' });
export type ImpliedVolatilitySnapshot = z.infer<typeof ImpliedVolatilitySnapshotSchema>;
export type TermStructurePoint = z.infer<typeof TermStructurePointSchema>;

export const BulkImpliedVolatilitySchema = z.strictObject({
  instruments: z
    .array(ImpliedVolatilitySnapshotSchema)
    .describe('one row per requested instrument with a fresh snapshot, in the order asked; an instrument without one is absent, never zeroed'),
  assumptions: z.strictObject({
    maxAgeDays: z.int().min(1).max(MAX_AGE_DAYS),
    requestedInstruments: z.int().min(1).max(MAX_IV_INSTRUMENTS).describe('distinct ids requested (a repeated id counts once)'),
    returnedInstruments: z.int().min(0).max(MAX_IV_INSTRUMENTS).describe('rows in instruments; requestedInstruments minus this many are absent'),
    includeTermStructure: z.boolean(),
    asOf: z.string().nullable().describe('the asOf day the read used; null when omitted (today, UTC)'),
    unknownInstrumentIds: z.array(z.string()).describe('requested ids that name no instrument, in the order asked (absent from instruments)'),
  }),
});
export type BulkImpliedVolatility = z.infer<typeof BulkImpliedVolatilitySchema>;
