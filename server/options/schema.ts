import { z } from 'zod';
import { BooleanValue, FiniteNumber, jsonCell, NonNegativeNumber, PositiveNumber } from '../ingest/fields.ts';
import { ingestCounts } from '../ingest/kind.ts';
import { IdSchema, InstrumentIdSchema, nameBasedUuid, type InstrumentId } from '../core/ids.ts';
import { AsOfSchema, DateSchema, InstantSchema } from '../core/time.ts';
import { whenParsed } from '../core/params.ts';
import { GREEKS_MISSING_INPUTS } from '../../workers/contract.ts';
import { STALE_REASONS } from './freshness.ts';

export const OPTION_RIGHTS = ['call', 'put'] as const;
export type OptionRight = (typeof OPTION_RIGHTS)[number];

const nullable = <T extends z.ZodType>(schema: T) =>
  schema
    .nullable()
    .optional()
    .transform((v) => v ?? null);

const Instant = InstantSchema.transform((s) => new Date(s).toISOString());
const Source = z.string().trim().min(1).max(300);

/**
 * The id a contract row without one gets: the name-based UUID (server/core/ids.ts)
 * of `option-contract:` and the JSON array [instrumentId, contractSymbol], so
 * a contract file posted again without ids updates the contracts it made.
 */
export function derivedContractId(instrumentId: InstrumentId, contractSymbol: string): string {
  return nameBasedUuid(`option-contract:${JSON.stringify([instrumentId, contractSymbol])}`);
}

/** A row of POST /admin/v1/options/contracts: the Contract as read, id optional, with listedAt. */
export const OptionContractRowSchema = z
  .strictObject({
    id: IdSchema.optional().describe('derived from instrumentId and contractSymbol when absent'),
    instrumentId: InstrumentIdSchema.describe('the underlying'),
    contractSymbol: z.string().trim().min(1).max(64).describe('e.g. the OCC symbol MSFT  240315C00400000'),
    expiry: DateSchema.describe('last trading day'),
    strike: PositiveNumber,
    right: z.enum(OPTION_RIGHTS),
    multiplier: FiniteNumber.refine((n) => Number.isInteger(n) && n > 0 && n <= 1_000_000, 'must be a whole number from 1 to 1000000').describe(
      'deliverable units per contract, e.g. 100 shares',
    ),
    isActive: BooleanValue.default(true),
    listedAt: nullable(Instant).describe('when the contract was listed; absent: listed from its first quote observation'),
    source: Source.default('ingested').describe("where the contract came from, e.g. the provider's name, or synthetic-demo"),
  })
  .transform((r) => ({ ...r, id: r.id ?? derivedContractId(r.instrumentId, r.contractSymbol) }));
export type OptionContractRow = z.infer<typeof OptionContractRowSchema>;

/** The provider's Greeks as a quote carries them: all six, or none. Units as the option-price route's: theta per calendar day, vega and rho per percentage point. */
export const ProviderGreeksSchema = z.strictObject({
  delta: FiniteNumber,
  gamma: FiniteNumber,
  theta: FiniteNumber,
  vega: FiniteNumber,
  rho: FiniteNumber,
  impliedVolatility: PositiveNumber.describe('annualised, as a decimal'),
  asOf: Instant.optional().describe("as read back: the quote's observedAt; ignored when equal, refused when not"),
  greeksSource: z
    .literal('provider', { error: 'only the provider Greeks of an observation are stored; computed Greeks are worked out at read time' })
    .optional(),
});

/**
 * A row of POST /admin/v1/options/quotes: one observation of one contract.
 * The observation time is `observedAt`, or `asOf` as the chain read names it,
 * so a quote as read (with its provider Greeks) can be posted back under its
 * contract's id.
 */
export const OptionQuoteRowSchema = z
  .strictObject({
    contractId: IdSchema,
    observedAt: Instant.optional().describe('when the quote was observed; observations are append-only'),
    asOf: Instant.optional().describe('the same instant under the name the chain read uses; give either, or both equal'),
    bid: nullable(NonNegativeNumber),
    ask: nullable(NonNegativeNumber),
    lastPrice: nullable(NonNegativeNumber),
    volume: nullable(NonNegativeNumber),
    openInterest: nullable(NonNegativeNumber),
    source: Source,
    greeks: nullable(jsonCell(ProviderGreeksSchema)).describe("the provider's Greeks, when it sent them (JSON text in a CSV cell)"),
  })
  .superRefine(
    (r, ctx) => {
      if (r.observedAt === undefined && r.asOf === undefined) ctx.addIssue({ code: 'custom', path: ['observedAt'], message: 'required (or asOf)' });
      if (r.observedAt !== undefined && r.asOf !== undefined && r.observedAt !== r.asOf) {
        ctx.addIssue({ code: 'custom', path: ['asOf'], message: 'must equal observedAt' });
      }
    },
    whenParsed('observedAt', 'asOf'),
  )
  .superRefine(
    (r, ctx) => {
      if (r.bid !== null && r.ask !== null && r.bid > r.ask) ctx.addIssue({ code: 'custom', path: ['ask'], message: 'must be at least bid' });
    },
    whenParsed('bid', 'ask'),
  )
  .superRefine(
    (r, ctx) => {
      if (r.greeks?.asOf !== undefined && r.greeks.asOf !== (r.observedAt ?? r.asOf)) {
        ctx.addIssue({ code: 'custom', path: ['greeks', 'asOf'], message: 'must equal observedAt: provider Greeks are part of the observation' });
      }
    },
    whenParsed('greeks', 'observedAt', 'asOf'),
  )
  // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- superRefine refuses a row with neither, so one is set
  .transform(({ asOf, observedAt, ...r }) => ({ ...r, observedAt: (observedAt ?? asOf)! }));
export type OptionQuoteRow = z.infer<typeof OptionQuoteRowSchema>;

export const TermStructurePointSchema = z.strictObject({
  expiry: DateSchema.optional(),
  daysToExpiry: FiniteNumber.refine((n) => Number.isInteger(n) && n >= 0, 'must be a whole number of days, 0 or more'),
  atmImpliedVolatility: PositiveNumber.nullable(),
});

/** A row of POST /admin/v1/iv-snapshots. */
export const IvSnapshotRowSchema = z.strictObject({
  instrumentId: InstrumentIdSchema,
  asOfDate: DateSchema,
  underlyingPrice: nullable(PositiveNumber),
  atmImpliedVolatility: nullable(PositiveNumber).describe('the 30-day at-the-money implied volatility, annualised'),
  impliedVolatility30d: nullable(PositiveNumber),
  historicalVolatility30d: nullable(PositiveNumber),
  parkinsonHistoricalVolatility30d: nullable(PositiveNumber),
  putCallIvRatio30d: nullable(PositiveNumber),
  termStructure: jsonCell(z.array(TermStructurePointSchema).max(500)).default([]).describe('one ATM IV per expiry (JSON text in a CSV cell)'),
  source: Source.default('ingested'),
});
export type IvSnapshotRow = z.infer<typeof IvSnapshotRowSchema>;

// Reads.

const Cutoff = AsOfSchema.optional().describe('knowledge cut-off: a date means the end of that day; omit for now');

export const ExpiriesQuerySchema = z.strictObject({ asOf: Cutoff });

export const ChainQuerySchema = z.strictObject({
  expiry: DateSchema.optional().describe('only contracts expiring that day'),
  strike: z
    .string()
    .regex(/^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/, { message: 'must be a number', abort: true })
    .transform(Number)
    .refine((n) => Number.isFinite(n) && n > 0, 'must be a finite number greater than 0')
    .optional()
    .describe('only contracts with exactly this strike'),
  right: z.enum(OPTION_RIGHTS).optional(),
  asOf: Cutoff,
});
export type ChainQuery = z.infer<typeof ChainQuerySchema>;

export const ContractQuerySchema = z.strictObject({ asOf: Cutoff });

export const OptionContractSchema = z
  .strictObject({
    id: z.string(),
    instrumentId: z.string(),
    contractSymbol: z.string(),
    expiry: z.string(),
    strike: z.number(),
    right: z.enum(OPTION_RIGHTS),
    multiplier: z.int().min(1).max(1_000_000),
    isActive: z.boolean().describe('false from 16:00 New York on the expiry day on (the cut-off is the read instant), or when the source marked it inactive'),
    listedAt: z.string().nullable().describe('when the contract was listed; null: from its first quote observation'),
    source: z.string().describe('where the contract came from (unrecorded for contracts stored before contracts named their source)'),
  })
  .meta({ id: 'OptionContract' });

export const OptionQuoteSchema = z
  .strictObject({
    bid: z.number().nullable(),
    ask: z.number().nullable(),
    lastPrice: z.number().nullable(),
    volume: z.number().nullable(),
    openInterest: z.number().nullable(),
    asOf: z.string().describe('when the quote was observed'),
    source: z.string(),
  })
  .meta({ id: 'OptionQuote' });

export const GreeksModelSchema = z.strictObject({
  name: z.literal('black-scholes-merton'),
  spotPrice: z.number(),
  riskFreeRate: z.number(),
  dividendYield: z.number(),
  spotAsOf: z.string().describe("date of the underlying's raw daily close used as spot: the latest known at the quote's instant"),
  riskFreeRateSource: z
    .enum(['fred:DGS3MO', 'fred:TB3MS', 'fallback'])
    .describe(
      "the series of the rate known at the quote's instant, as GET /v1/rates/risk-free?asOf=<quote's asOf> reports it: fred:DGS3MO (daily), fred:TB3MS (monthly average), or fallback (the hard-coded TB3MS 2022-09, only after it was known)",
    ),
  riskFreeRateAsOf: z.string().describe('date of the rate observation (a monthly average is dated the first of its month)'),
  riskFreeRateKnownFrom: z.string().describe("the first instant the rate counts as known (end of its UTC day, or of its month): at or before the quote's asOf"),
  dividendYieldSource: z.literal('assumed_zero').describe('no dividend-yield source is stored, so 0 is used'),
  expiryDays: z.number().describe('calendar days from the quote to 16:00 New York on the expiry day'),
  timeToExpirationYears: z.number().describe('expiryDays / 365 (ACT/365F)'),
  optionPrice: z.number().describe('the price the implied volatility was solved from: the quote mid (bid + ask) / 2'),
});

export const GreeksSchema = z
  .strictObject({
    delta: z.number(),
    gamma: z.number(),
    theta: z.number().describe('per calendar day'),
    vega: z.number().describe('per percentage point of volatility'),
    rho: z.number().describe('per percentage point of rate'),
    impliedVolatility: z.number(),
    asOf: z.string().describe('the observation the Greeks belong to'),
    greeksSource: z.enum(['provider', 'computed']),
    model: GreeksModelSchema.optional().describe('computed Greeks only: the inputs exactly as used'),
  })
  .meta({ id: 'Greeks' });

export const GreeksUnavailableSchema = z
  .strictObject({
    reason: z.enum(['not_supplied_and_not_computable']),
    missingInputs: z
      .array(z.enum(GREEKS_MISSING_INPUTS))
      .min(1)
      .describe(
        "quote: no observation at the cut-off, or bid and ask both 0; riskFreeRate: no rate was known at the quote's instant (a later one is never used)",
      ),
    detail: z.string(),
  })
  .meta({ id: 'GreeksUnavailable' });
export type GreeksUnavailable = z.infer<typeof GreeksUnavailableSchema>;

export const ChainItemSchema = z
  .strictObject({
    contract: OptionContractSchema,
    quote: OptionQuoteSchema.nullable().describe('the latest observation at or before the cut-off; null when none'),
    greeks: GreeksSchema.nullable(),
    greeksUnavailable: GreeksUnavailableSchema.nullable().describe('present exactly when greeks is null'),
  })
  .meta({ id: 'OptionChainItem' });
export type ChainItem = z.infer<typeof ChainItemSchema>;

const GREEKS_SOURCES = { provider: z.int().min(0), computed: z.int().min(0), unavailable: z.int().min(0) };

const StaleReasonSchema = z
  .enum(STALE_REASONS)
  .nullable()
  .describe(
    'why stale, null when fresh: contract_expired (the cut-off is at or after 16:00 New York on its expiry day), no_quote (no observation at or before the cut-off), quote_older_than_one_session (a whole 09:30-16:00 New York weekday session lies between the quote and the cut-off)',
  );

export const ChainMetaSchema = z.strictObject({
  asOf: z.string().describe('the cut-off as given, or the time of the read'),
  source: z.string().describe('sources of the returned contracts and their quotes, sorted and comma-separated; none when no row is returned'),
  stale: z.boolean().describe('true when any returned row is stale (staleContracts > 0)'),
  staleReason: StaleReasonSchema.describe('the first of contract_expired, quote_older_than_one_session, no_quote that any returned row has; null when none'),
  staleContracts: z.int().min(0).describe('returned rows whose contract has expired, or whose quote is missing or older than one session'),
  greeksCoverage: z.strictObject(GREEKS_SOURCES).describe('over exactly the rows returned'),
});

export const ContractMetaSchema = z.strictObject({
  asOf: z.string().describe('the cut-off as given, or the time of the read'),
  source: z.string().describe('the sources of the contract and its quote, sorted and comma-separated'),
  stale: z.boolean(),
  staleReason: StaleReasonSchema,
});

export const ExpiriesMetaSchema = z.strictObject({
  asOf: z.string().describe('the cut-off as given, or the time of the read'),
  source: z.string().describe('sources of the listed contracts and their latest quotes at the cut-off, sorted and comma-separated'),
  stale: z.boolean().describe('true when no listed contract has a quote at most one session old at the cut-off'),
  staleReason: z
    .enum(['quote_older_than_one_session', 'no_quote'])
    .nullable()
    .describe('no_quote: no listed contract has any quote; quote_older_than_one_session: the newest is older than one session; null when fresh'),
});

/** What deriving snapshots stored: the iv-snapshots counts, and the days skipped for want of an underlying close. */
export const DerivedSnapshotsSchema = z.strictObject({
  ...ingestCounts,
  skippedDays: z.int().min(0).describe('underlying days with quotes but no raw daily close on or before them'),
});
