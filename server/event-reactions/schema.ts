import { staleMetaFields } from '../core/freshness.ts';
import { z } from 'zod';
import { EventClassSchema } from '../news/schema.ts';
import { MAX_GAP_DAYS, SESSION_CLOSE, SESSION_TIME_ZONE } from './session.ts';
import { integerParam } from '../core/params.ts';
import { DateSchema, withOrderedBounds } from '../core/time.ts';

export const EventReactionsQuerySchema = withOrderedBounds(
  z.strictObject({
    eventClass: EventClassSchema.optional().describe('only reactions to news of this class (exact match); omit for all'),
    from: DateSchema.optional().describe('first eventDate (the session date), inclusive'),
    to: DateSchema.optional().describe('last eventDate (the session date), inclusive'),
  }),
);

export type EventReactionsQuery = z.infer<typeof EventReactionsQuerySchema>;

const REACTION_STALE_REASONS = ['series_behind', 'no_bars'] as const;
const REACTION_RULE =
  "the instrument's last daily bar is older than the last session completed at the time of reading (or it has none): news published since gets no reaction until its bars arrive";

const IS_CORPORATE_ADJUSTED =
  'true when an action scaled either close: an applied split, stock dividend or cash dividend (known now, not backfilled, not already reflected ' +
  'by a vendor-adjusted bar) goes ex after previousSessionDate, so at least previousClose is adjusted; the closes are then printed as the price ' +
  'routes print adjusted values (13 significant digits), and actionSetVersion names the action set used';

/** The move of one instrument across the session a news item falls in. */
export const EventReactionSchema = z
  .strictObject({
    eventId: z.string().describe('the news item (GET /instruments/{id}/news)'),
    eventClass: z.string(),
    publishedAt: z.string(),
    eventDate: z
      .string()
      .describe(
        `the session the item falls in: the first day with a daily bar whose ${SESSION_CLOSE} ${SESSION_TIME_ZONE} close is at or after publishedAt ` +
          '(published before or during a session: that session; after its close, at a weekend or on a holiday: the next)',
      ),
    previousSessionDate: z.string().describe('the bar before eventDate'),
    previousClose: z.number().describe('adjusted close of previousSessionDate, exactly as GET /instruments/{id}/prices?adjusted=true prints it'),
    sessionClose: z.number().describe('adjusted close of eventDate, exactly as GET /instruments/{id}/prices?adjusted=true prints it'),
    reactionPct: z.number().describe('100 × (sessionClose / previousClose − 1) of the closes as printed: the signed move'),
    absMovePct: z.number().describe('|reactionPct|'),
    isCorporateAdjusted: z.boolean().describe(IS_CORPORATE_ADJUSTED),
    actionSetVersion: z
      .int()
      .min(0)
      .nullable()
      .describe("the instrument's action-set version the adjusted closes used, whenever isCorporateAdjusted; null when neither close was scaled"),
  })
  .meta({ id: 'EventReaction' });

export type EventReaction = z.infer<typeof EventReactionSchema>;

export const ReactionAssumptionsSchema = z.strictObject({
  timeZone: z.literal(SESSION_TIME_ZONE),
  sessionClose: z.literal(SESSION_CLOSE).describe('the regular session close, New York wall clock'),
  maxGapDays: z
    .literal(MAX_GAP_DAYS)
    .describe('no reaction when eventDate is more than this many calendar days after the New York day of publication or after previousSessionDate'),
  prices: z.literal('adjusted daily closes: actions known now, backfilled actions left out'),
});

export const reactionAssumptions = (): z.infer<typeof ReactionAssumptionsSchema> => ({
  timeZone: SESSION_TIME_ZONE,
  sessionClose: SESSION_CLOSE,
  maxGapDays: MAX_GAP_DAYS,
  prices: 'adjusted daily closes: actions known now, backfilled actions left out',
});

export const EventReactionsMetaSchema = z.strictObject({
  asOf: z.string().describe('the time of the read'),
  source: z.string().describe('the sources of the news items reacted to and of the closes, comma-separated; none without rows'),
  ...staleMetaFields(REACTION_STALE_REASONS, REACTION_RULE),
  assumptions: ReactionAssumptionsSchema,
});

/** The most classes one coverage call names: far more than any source defines, and the query string stays short. */
export const MAX_COVERAGE_CLASSES = 100;

export const CoverageQuerySchema = z.strictObject({
  eventClasses: z
    .string()
    .min(1, 'must name at least one class; omit it to count all classes together')
    .transform((s) => [...new Set(s.split(',').map((c) => c.trim()))])
    .pipe(z.array(EventClassSchema).max(MAX_COVERAGE_CLASSES, `at most ${MAX_COVERAGE_CLASSES} distinct classes per call`))
    .optional()
    .describe('comma-separated classes counted together (exact match); omit to count every class; a class with no reactions adds nothing'),
  minReactions: integerParam(1, 1000).default(1).describe('only instruments with at least this many reactions'),
  minWindowDays: integerParam(1, 36_500).optional().describe('only instruments whose first and last eventDate are at least this many calendar days apart'),
  limit: integerParam(1, 5000).default(1000).describe('instruments returned, best covered first'),
});

export type CoverageQuery = z.infer<typeof CoverageQuerySchema>;

export const CoveredInstrumentSchema = z.strictObject({
  instrumentId: z.string(),
  symbol: z.string().describe("the instrument's current symbol"),
  reactionCount: z.int().min(1),
  firstEventDate: z.string(),
  lastEventDate: z.string(),
  observationWindowDays: z.int().min(0).describe('lastEventDate − firstEventDate, calendar days'),
});

export const CoverageSchema = z
  .strictObject({
    instruments: z
      .array(CoveredInstrumentSchema)
      .describe('best covered first: reactionCount descending, then observationWindowDays descending, then symbol (byte order), then instrumentId'),
    assumptions: z.strictObject({
      eventClasses: z
        .array(z.string())
        .describe('the classes counted, deduplicated in request order; empty when eventClasses was omitted (every class counted)'),
      minReactions: z.int().min(1).max(1000),
      minWindowDays: z.int().min(1).max(36_500).nullable().describe('null when omitted'),
      limit: z.int().min(1).max(5000),
    }),
  })
  .meta({ id: 'EventReactionCoverage' });

export type Coverage = z.infer<typeof CoverageSchema>;

export const CoverageMetaSchema = z.strictObject({
  asOf: z.string(),
  source: z.string().describe('the sources of the news items behind the counted reactions, comma-separated; none without rows'),
  ...staleMetaFields(REACTION_STALE_REASONS, `a listed instrument's daily series is stale: ${REACTION_RULE}`),
});

/** What one derivation run stored. */
export const DerivedReactionsSchema = z.strictObject({
  instruments: z.int().min(0).describe('instruments whose reactions were derived: those in scope with news or stored reactions'),
  rows: z.int().min(0).describe('reactions derived (news items the bars could place)'),
  inserted: z.int().min(0),
  updated: z.int().min(0).describe('stored reactions that changed'),
  unchanged: z.int().min(0),
  removed: z.int().min(0).describe('stored reactions of news items that no longer yield one'),
});

export type DerivedReactions = z.infer<typeof DerivedReactionsSchema>;
