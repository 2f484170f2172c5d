import { EARNINGS_SILENCE_DAYS, SILENCE_STALE_REASONS, staleMetaFields } from '../core/freshness.ts';
import { z } from 'zod';
import { FiniteNumber } from '../ingest/fields.ts';
import { IdSchema, type InstrumentId, InstrumentIdSchema, nameBasedUuid } from '../core/ids.ts';
import { closedEnum } from '../core/params.ts';
import { DateSchema, isDate, withOrderedBounds } from '../core/time.ts';

/**
 * When the report is released relative to the regular session of the
 * instrument's exchange, on reportDate: before the market opens, after it
 * closes, during market hours, or not announced.
 */
export const SESSIONS = ['bmo', 'amc', 'dmh', 'unknown'] as const;
export type Session = (typeof SESSIONS)[number];

/** scheduled: announced, not yet out; reported: released. */
export const STATUSES = ['scheduled', 'reported'] as const;
export type Status = (typeof STATUSES)[number];

/** Quarters, half-years and the full fiscal year, as issuers label their reports. */
export const FISCAL_PERIODS = ['Q1', 'Q2', 'Q3', 'Q4', 'H1', 'H2', 'FY'] as const;
export type FiscalPeriod = (typeof FISCAL_PERIODS)[number];

/** The fiscal years stored: wide enough for any listed company's history and calendar, narrow enough to catch a typo. */
export const MIN_FISCAL_YEAR = 1900;
export const MAX_FISCAL_YEAR = 2200;

/** The longest window of the market-wide read, counted inclusively: 2022-01-01..2022-12-31 is 365 days. */
export const MAX_WINDOW_DAYS = 365;

export const SessionSchema = closedEnum(SESSIONS).describe(
  'bmo (before market open), amc (after market close), dmh (during market hours), unknown (not announced)',
);
export const StatusSchema = closedEnum(STATUSES).describe('scheduled (announced, not yet released) or reported (released)');
export const FiscalPeriodSchema = closedEnum(FISCAL_PERIODS).describe('Q1..Q4, H1, H2 or FY, as the issuer labels the report');

const FISCAL_YEAR_RANGE = `must be a whole number from ${MIN_FISCAL_YEAR} to ${MAX_FISCAL_YEAR}`;
const FiscalYearSchema = FiniteNumber.refine((n) => Number.isInteger(n) && n >= MIN_FISCAL_YEAR && n <= MAX_FISCAL_YEAR, FISCAL_YEAR_RANGE).describe(
  "the issuer's fiscal year, named by the calendar year it ends in",
);

/** Whole days from `from` to `to`, both counted: the same day is 1. */
export function inclusiveDays(from: string, to: string): number {
  return (Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000 + 1;
}

/** The last `to` a window starting on `from` may have. */
function lastDayOfWindow(from: string): string {
  return new Date(Date.parse(`${from}T00:00:00Z`) + (MAX_WINDOW_DAYS - 1) * 86_400_000).toISOString().slice(0, 10);
}

export const InstrumentEarningsQuerySchema = withOrderedBounds(
  z.strictObject({
    from: DateSchema.optional().describe('first reportDate, inclusive; omit for no lower bound'),
    to: DateSchema.optional().describe('last reportDate, inclusive; omit for no upper bound'),
  }),
);

export type InstrumentEarningsQuery = z.infer<typeof InstrumentEarningsQuerySchema>;

export const MarketEarningsQuerySchema = withOrderedBounds(
  z.strictObject({
    from: DateSchema.describe('first reportDate, inclusive'),
    to: DateSchema.describe(`last reportDate, inclusive; at most ${MAX_WINDOW_DAYS} days from from, both days counted`),
    instrumentId: InstrumentIdSchema.optional().describe('narrows the calendar to one instrument; an unknown one is 404'),
  }),
).refine((q) => !isDate(q.from) || !isDate(q.to) || q.from > q.to || inclusiveDays(q.from, q.to) <= MAX_WINDOW_DAYS, {
  path: ['to'],
  error: (issue) => {
    const { from, to } = issue.input as { from: string; to: string };
    return `the window ${from}..${to} spans ${inclusiveDays(from, to)} days, from and to both counted; at most ${MAX_WINDOW_DAYS}, so ${lastDayOfWindow(from)} at the latest`;
  },
});

export type MarketEarningsQuery = z.infer<typeof MarketEarningsQuerySchema>;

/**
 * The id a row without one gets: the name-based UUID (server/core/ids.ts) of
 * `earnings-report:` followed by the JSON array [instrumentId, fiscalYear,
 * fiscalPeriod], so a report posted again without an id (rescheduled,
 * or now reported) updates the row it made before.
 */
export function derivedEarningsId(instrumentId: InstrumentId, fiscalYear: number, fiscalPeriod: FiscalPeriod): string {
  return nameBasedUuid(`earnings-report:${JSON.stringify([instrumentId, fiscalYear, fiscalPeriod])}`);
}

const READ_ONLY = 'read-only, as GET returns it: accepted so a read can be posted back, never stored (resolved from the instrument at read)';

/**
 * An admin row: one report of one instrument's fiscal period, keyed by
 * (instrumentId, fiscalYear, fiscalPeriod). A rescheduled report is the same
 * key with a new reportDate or session, and updates its row. There is no EPS
 * field of any kind: estimates, actuals and consensus are not part of the
 * calendar.
 */
export const EarningsReportRowSchema = z
  .strictObject({
    id: IdSchema.optional().describe('derived from instrumentId, fiscalYear and fiscalPeriod when absent'),
    instrumentId: InstrumentIdSchema,
    reportDate: DateSchema.describe('the day the report is (or was) released'),
    session: SessionSchema,
    fiscalPeriod: FiscalPeriodSchema,
    fiscalYear: FiscalYearSchema,
    status: StatusSchema,
    source: z.string().trim().min(1).max(300),
    symbol: z.string().nullable().optional().describe(READ_ONLY),
    displayName: z.string().nullable().optional().describe(READ_ONLY),
  })
  .transform(({ symbol: _symbol, displayName: _displayName, ...row }) => ({
    ...row,
    id: row.id ?? derivedEarningsId(row.instrumentId, row.fiscalYear, row.fiscalPeriod),
  }));

export type EarningsReportRow = z.infer<typeof EarningsReportRowSchema>;

/** One report as the calendar lists it. */
export const EarningsReportSchema = z
  .strictObject({
    instrumentId: z.string(),
    symbol: z
      .string()
      .nullable()
      .describe(
        "the instrument's symbol on reportDate, from its symbol history: the mapping valid that day; on a day none covers, the latest that began before it (a delisted instrument keeps its last symbol); null before its first mapping",
      ),
    displayName: z.string().describe("the instrument's display name"),
    reportDate: z.string(),
    session: SessionSchema,
    fiscalPeriod: FiscalPeriodSchema,
    fiscalYear: z.int().min(MIN_FISCAL_YEAR).max(MAX_FISCAL_YEAR),
    status: StatusSchema,
    source: z.string(),
  })
  .meta({ id: 'EarningsReport' });

export type EarningsReport = z.infer<typeof EarningsReportSchema>;

export const EarningsMetaSchema = z.strictObject({
  asOf: z.string().describe('the time of the read'),
  source: z.string(),
  ...staleMetaFields(
    ['report_past_due', ...SILENCE_STALE_REASONS],
    'report_past_due when a returned report is still scheduled on a UTC day after its reportDate; else source_silent when a source of the returned rows ' +
      `has no report, of any instrument, dated from ${EARNINGS_SILENCE_DAYS} days before the UTC day of the read to that day (a quarter and the later annual report); ` +
      "without rows, when none of the read's sources (those of the instrument's reports, or every source on the market-wide read) has; no_source when there are none",
  ),
});
