import { z } from 'zod';
import { CALENDAR_SILENCE_DAYS, SILENCE_STALE_REASONS, staleMetaFields } from '../core/freshness.ts';
import { IdSchema, nameBasedUuid } from '../core/ids.ts';
import { CursorSchema, NextCursorSchema } from '../core/cursor.ts';
import { closedEnum, integerParam } from '../core/params.ts';
import { DateSchema, InstantSchema, withOrderedBounds } from '../core/time.ts';

/**
 * The kinds of release a calendar lists, from what real calendars publish
 * (examples in each comment). A closed list: a value outside it is a 400
 * naming the list.
 */
export const EVENT_CLASSES = [
  /** Rate decisions, minutes, policy statements, speeches; policy rates. */
  'central_bank',
  /** Payrolls, unemployment rate, jobless claims, earnings. */
  'employment',
  /** CPI, PPI, PCE prices, import prices. */
  'inflation',
  /** GDP and the national accounts. */
  'growth',
  /** Retail sales, personal income and spending, consumer credit. */
  'consumer',
  /** Industrial production, durable goods, factory orders, manufacturing PMIs. */
  'manufacturing',
  /** Services PMIs and activity. */
  'services',
  /** Housing starts, building permits, home sales, house prices. */
  'housing',
  /** Trade balance, current account. */
  'trade',
  /** Consumer confidence, business climate surveys. */
  'sentiment_survey',
  /** Budget balance, public debt. */
  'fiscal',
  /** Government debt auctions. */
  'bond_auction',
  /** Crude oil and natural gas inventories. */
  'energy',
] as const;
export type EventClass = (typeof EVENT_CLASSES)[number];

export const IMPORTANCES = ['low', 'medium', 'high'] as const;
export type Importance = (typeof IMPORTANCES)[number];

export const EventClassSchema = closedEnum(EVENT_CLASSES).describe(
  'central_bank (rate decisions, minutes, statements, speeches), employment (payrolls, unemployment, claims, earnings), ' +
    'inflation (CPI, PPI, PCE prices, import prices), growth (GDP, national accounts), consumer (retail sales, personal income and spending, consumer credit), ' +
    'manufacturing (industrial production, durable goods, factory orders, manufacturing PMIs), services (services PMIs and activity), ' +
    'housing (starts, permits, home sales, house prices), trade (trade balance, current account), sentiment_survey (consumer confidence, business climate), ' +
    'fiscal (budget balance, public debt), bond_auction (government debt auctions), energy (crude and gas inventories)',
);
export const ImportanceSchema = closedEnum(IMPORTANCES).describe('how much the release is expected to move markets, as the provider rates it');

/** ISO 3166-1 alpha-2, upper-cased; the format is checked, not membership (`EU` stands for euro-area and EU releases). */
export const CountrySchema = z
  .string()
  .regex(/^[A-Za-z]{2}$/, 'must be an ISO 3166-1 alpha-2 code (two letters)')
  .transform((s) => s.toUpperCase())
  .describe('ISO 3166-1 alpha-2 country code, case-insensitive; EU for euro-area and EU releases');

/** The longest actual, forecast or previous string stored: real calendars print a dozen characters at most ("-20493K", "1,234.5 K"). */
export const MAX_FIGURE_LENGTH = 64;

export const EconomicEventsQuerySchema = withOrderedBounds(
  z.strictObject({
    from: DateSchema.optional().describe('first day (UTC) of scheduledAt, inclusive'),
    to: DateSchema.optional().describe('last day (UTC) of scheduledAt, inclusive'),
    eventClass: EventClassSchema.optional(),
    country: CountrySchema.optional(),
    importance: ImportanceSchema.optional(),
    limit: integerParam(1, 500).default(100).describe('rows returned, newest first; meta.truncated says whether more matched, meta.nextCursor reads on'),
    cursor: CursorSchema,
  }),
);

export type EconomicEventsQuery = z.infer<typeof EconomicEventsQuerySchema>;

/** A provider's figure as text, kept exactly; null when the provider gives none (not yet released, no forecast). */
const figure = (what: string) =>
  z
    // Present in every row, null when absent: "required" tells a row that left the field out from one that sent a number.
    .string({ error: (issue) => (issue.input === undefined ? 'required' : "must be text (the provider's string) or null") })
    .max(MAX_FIGURE_LENGTH, `at most ${MAX_FIGURE_LENGTH} characters`)
    .nullable()
    .describe(`${what}: the provider's string exactly as published (e.g. "3.4%", "-12K"), never parsed; null when absent`);

const NAME = 'the release as calendars name it, e.g. "Nonfarm Payrolls"';
const REFERENCE_PERIOD = 'the period the figure covers, as the provider writes it, e.g. "2022-09", "Q3 2022"';
const SCHEDULED_AT = 'scheduled release time, UTC; a rescheduled release keeps its id';

const FIELDS = {
  country: CountrySchema,
  eventClass: EventClassSchema,
  importance: ImportanceSchema,
  name: z.string().trim().min(1).max(200).describe(NAME),
  referencePeriod: z.string().trim().min(1).max(64).describe(REFERENCE_PERIOD),
  scheduledAt: InstantSchema.transform((s) => new Date(s).toISOString()).describe(SCHEDULED_AT),
  actual: figure('the released value'),
  forecast: figure('the consensus forecast'),
  previous: figure("the prior period's value"),
  source: z.string().trim().min(1).max(300),
};

/**
 * The id a row without one gets: the name-based UUID (server/core/ids.ts) of
 * `economic-event:` followed by the JSON array [country, name,
 * referencePeriod], so a release posted again without an id, rescheduled or
 * with its actual filled in, updates the row it made before. The array keeps
 * the parts apart: a name holding ":" cannot run into the period.
 */
export function derivedEventId(country: string, name: string, referencePeriod: string): string {
  return nameBasedUuid(`economic-event:${JSON.stringify([country, name, referencePeriod])}`);
}

/**
 * An admin row: the public row's fields, `id` optional. actual, forecast and
 * previous must be present (null when absent), so a row that forgets one
 * cannot silently erase a stored figure.
 */
export const EconomicEventRowSchema = z
  .strictObject({ id: IdSchema.optional().describe('derived from country, name and referencePeriod when absent'), ...FIELDS })
  .transform((row) => ({ ...row, id: row.id ?? derivedEventId(row.country, row.name, row.referencePeriod) }));

export type EconomicEventRow = z.infer<typeof EconomicEventRowSchema>;

/** One scheduled release: the public row of GET /economic-events. */
export const EconomicEventSchema = z
  .strictObject({
    id: z.string().describe('given at ingest, or derived from country, name and referencePeriod'),
    country: z.string().describe('ISO 3166-1 alpha-2, upper case; EU for euro-area and EU releases'),
    eventClass: EventClassSchema,
    importance: ImportanceSchema,
    name: z.string().describe(NAME),
    referencePeriod: z.string().describe(REFERENCE_PERIOD),
    scheduledAt: z.string().describe(SCHEDULED_AT),
    actual: FIELDS.actual,
    forecast: FIELDS.forecast,
    previous: FIELDS.previous,
    source: z.string(),
  })
  .meta({ id: 'EconomicEvent' });

export type EconomicEvent = z.infer<typeof EconomicEventSchema>;

export const EconomicEventsMetaSchema = z.strictObject({
  asOf: z.string().describe('the time of the read'),
  source: z.string(),
  ...staleMetaFields(
    ['release_past_due', ...SILENCE_STALE_REASONS],
    'release_past_due when a returned release is past its scheduledAt at the time of reading and its actual is still null; ' +
      'else, within the filters other than from and to (country, eventClass, importance): source_silent when a source of the returned rows has no release ' +
      `scheduled in the ${CALENDAR_SILENCE_DAYS} days (a quarter and two weeks) before the time of reading, or, without rows, when no release is; ` +
      'no_source when the filters select no release at all',
  ),
  limit: z.int().min(1).max(500),
  truncated: z.boolean().describe('more rows matched than limit: meta.nextCursor reads on'),
  nextCursor: NextCursorSchema,
});
