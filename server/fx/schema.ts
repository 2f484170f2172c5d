import { z } from 'zod';
import { FiniteNumber } from '../ingest/fields.ts';
import { AsOfSchema, DateSchema, InstantSchema } from '../core/time.ts';
import { staleMetaFields } from '../core/freshness.ts';
import { whenParsed } from '../core/params.ts';

/**
 * A currency code as the path and the ingest rows take it: exactly three ASCII
 * letters, upper-cased. Only the format is checked, not ISO 4217's list: a
 * well-formed code that no provider publishes simply has no stored rate (404).
 */
export const CurrencyCodeSchema = z
  .string()
  .regex(/^[A-Za-z]{3}$/, 'must be a 3-letter ISO 4217 currency code')
  .transform((s) => s.toUpperCase());

const differentCurrencies = (pair: { base: string; quote: string }) => pair.base !== pair.quote;
const SAME_CURRENCY = { path: ['quote'], message: 'must differ from base', ...whenParsed('base', 'quote') };

export const FxPairParamsSchema = z
  .strictObject({
    base: CurrencyCodeSchema.describe('the currency priced, one unit of it: 3 letters, any case'),
    quote: CurrencyCodeSchema.describe('the currency the rate is stated in: 3 letters, any case, not the base'),
  })
  .refine(differentCurrencies, SAME_CURRENCY);

export const FxRateQuerySchema = z.strictObject({
  date: DateSchema.describe('the rate date; a date with no stored rate is 404, never interpolated'),
  asOf: AsOfSchema.optional().describe(
    'point-in-time cut-off (a date means the end of that UTC day; an instant is used exactly): the rate of the date as it was known then, a correction known later left out; a rate of the date first known after it is 404, saying so; omit for the latest',
  ),
});

// The smallest normal double: the reciprocal of any smaller rate (served for
// the inverse pair) is infinite. sql/005_fx_rates.sql holds the same bound.
const MIN_RATE = 2.2250738585072014e-308;

/** What one rate row of POST /admin/v1/fx holds: the public FX rate, with asOf optional. */
export const FxRateRowSchema = z
  .strictObject({
    base: CurrencyCodeSchema,
    quote: CurrencyCodeSchema,
    rateDate: DateSchema,
    rate: FiniteNumber.refine((n) => n > 0, { message: 'must be greater than 0', abort: true })
      .refine((n) => n >= MIN_RATE, `must be at least ${MIN_RATE} (the smallest normal double, so that its reciprocal is finite)`)
      .describe('units of the quote currency per one unit of the base currency'),
    source: z.string().trim().min(1).max(300),
    asOf: InstantSchema.refine((s) => Date.parse(s) <= Date.now(), 'must not be in the future')
      .nullable()
      .optional()
      .transform((v) => v ?? null)
      .describe(
        "when this value became known (the provider's publication time), its knowledge time for reads with asOf: not in the future, not before the start (UTC) of rateDate, and not before the asOf of the stored rate a correction replaces; absent: the instant the upload began",
      ),
  })
  .refine(differentCurrencies, SAME_CURRENCY);

export type FxRateRow = z.infer<typeof FxRateRowSchema>;

export const FxRateSchema = z
  .strictObject({
    base: z.string(),
    quote: z.string(),
    rateDate: z.string(),
    rate: z.number().describe('units of the quote currency per one unit of the base currency'),
    asOf: z
      .string()
      .describe(
        'when this value became known, its knowledge time: the asOf given at ingest, or the instant its upload began; with an asOf read, at or before the cut-off',
      ),
    source: z.string(),
  })
  .meta({ id: 'FxRate' });

export type FxRate = z.infer<typeof FxRateSchema>;

export const FxDerivationSchema = z
  .strictObject({
    method: z.literal('inverse'),
    storedPair: z.string().describe('the pair actually stored, e.g. USD/CHF'),
    storedRate: z.number().describe('the stored rate; the served rate is 1 / storedRate'),
  })
  .describe('how a rate not stored itself was derived; null for a stored rate');

export type FxDerivation = z.infer<typeof FxDerivationSchema>;

export const FxRateMetaSchema = z.strictObject({
  asOf: z.string().describe('the knowledge time of the rate served (for an inverse, of the stored rate it was derived from)'),
  source: z.string(),
  ...staleMetaFields(
    ['rate_behind'],
    "the pair (in either direction) has no rate dated on or after the weekday before the UTC day of the read's instant (asOf when given, else the time of the read), and known at that instant, whatever date was asked for: its feed is behind",
  ),
  derivation: FxDerivationSchema.nullable(),
});
