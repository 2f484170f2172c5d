import { SILENCE_STALE_REASONS, SOURCE_SILENCE_DAYS, staleMetaFields } from '../core/freshness.ts';
import { z } from 'zod';
import { BooleanValue, FiniteNumber, jsonCell } from '../ingest/fields.ts';
import { ingestCounts } from '../ingest/kind.ts';
import { InstrumentIdSchema } from '../core/ids.ts';
import { closedEnum, whenParsed } from '../core/params.ts';
import { DateSchema, withOrderedBounds } from '../core/time.ts';
import { LAGS, MAX_LAG_DAYS, MIN_PAIRS, PROMOTION_RULE, SESSION_LOOKBACK_DAYS } from '../../workers/contract.ts';

/**
 * What a score is about. A closed list: a value outside it is a 400 naming it.
 * - business: the company's business (results, products, deals, management,
 *   legal); news of it may move the price later, so it may lead.
 * - market_commentary: commentary on the stock's own price and trading
 *   ("shares slide", "analysts see resistance"); it follows the price and is
 *   never a signal, so it is never eligible for promotion.
 */
export const SUBJECT_CLASSES = ['business', 'market_commentary'] as const;
export type SubjectClass = (typeof SUBJECT_CLASSES)[number];

export const SubjectClassSchema = closedEnum(SUBJECT_CLASSES).describe(
  'business: about the company itself (results, products, deals, management, legal), which may lead the price; ' +
    "market_commentary: about the stock's own price and trading, which follows the price and is never a signal",
);

const Source = z.string().trim().min(1).max(300);

const SCORE = "the source's score exactly as stored, never rescaled (float8: the number read back is the number ingested; -0 is stored as 0, the same score)";
const SCALE = "the source's own scale [min, max]; every score of a source is on its one scale";

/** Two finite numbers, min below max. -0 becomes 0, as for a score. */
const ScaleSchema = jsonCell(
  z
    .tuple([FiniteNumber, FiniteNumber], { error: 'must be [min, max]: two finite numbers' })
    .refine(([min, max]) => min < max, 'min must be below max')
    .transform(([min, max]): [number, number] => [min + 0, max + 0]),
).describe(`${SCALE} (JSON text in a CSV cell)`);

/**
 * A row of POST /admin/v1/sentiment, keyed by (instrumentId, source,
 * subjectClass, asOfDate): posted again, it updates the score. A score outside
 * the row's scale is refused here; a scale other than the source's is refused
 * by the upload (sentiment/ingest.ts).
 */
export const SentimentRowSchema = z
  .strictObject({
    instrumentId: InstrumentIdSchema,
    source: Source.describe('who scored it; one scale per source'),
    subjectClass: SubjectClassSchema,
    asOfDate: DateSchema.describe('the day the score is as of'),
    // + 0 turns -0 into 0: the same score, and JSON.stringify writes both as 0 anyway.
    score: FiniteNumber.transform((n) => n + 0).describe(SCORE),
    scale: ScaleSchema,
    isHeadlineOnly: BooleanValue.describe('scored from the headline alone: shallower coverage, lower confidence'),
  })
  .superRefine(
    (row, ctx) => {
      const [min, max] = row.scale;
      if (row.score < min || row.score > max) ctx.addIssue({ code: 'custom', path: ['score'], message: `must be within the scale [${min}, ${max}]` });
    },
    whenParsed('scale', 'score'),
  );

export type SentimentRow = z.infer<typeof SentimentRowSchema>;

export const SentimentQuerySchema = withOrderedBounds(
  z.strictObject({
    from: DateSchema.optional().describe('first asOfDate, inclusive'),
    to: DateSchema.optional().describe('last asOfDate, inclusive'),
    subjectClass: SubjectClassSchema.optional(),
    source: Source.optional().describe('only this source (exact)'),
  }),
);

export type SentimentQuery = z.infer<typeof SentimentQuerySchema>;

export const SentimentScoreSchema = z
  .strictObject({
    instrumentId: z.string(),
    asOfDate: z.string(),
    score: z.number().describe(SCORE),
    scale: z.tuple([z.number(), z.number()]).describe(SCALE),
    subjectClass: SubjectClassSchema,
    isHeadlineOnly: z.boolean(),
    source: z.string(),
  })
  .meta({ id: 'SentimentScore' });

export type SentimentScore = z.infer<typeof SentimentScoreSchema>;

export const SentimentMetaSchema = z.strictObject({
  asOf: z.string().describe('the time of the read'),
  source: z.string().describe("the rows' sources, comma-separated; none when no row"),
  ...staleMetaFields(
    SILENCE_STALE_REASONS,
    `source_silent when a source of the returned rows has not scored the instrument (of subjectClass when given) from ${SOURCE_SILENCE_DAYS} days ` +
      'before the UTC day of the read to that day; without rows, when no score of the instrument (of source and subjectClass when given) is dated then; ' +
      'no_source when the instrument has no such score at all',
  ),
});

// Source leads.

export const SourceLeadsQuerySchema = z.strictObject({
  source: Source.optional().describe('only this source (exact)'),
  subjectClass: SubjectClassSchema.optional(),
});

export type SourceLeadsQuery = z.infer<typeof SourceLeadsQuerySchema>;

/**
 * Why a lead's correlation is null (docs/api.md, "When there is not enough
 * data"): fewer than MIN_PAIRS (score, return) pairs, or enough pairs of
 * which one side does not vary (workers/source-leads.ts: its spread is 0,
 * or beyond the range of a double).
 */
export const LEAD_NULL_REASONS = ['insufficient_pairs', 'no_variation'] as const;
export type LeadNullReason = (typeof LEAD_NULL_REASONS)[number];
const LEAD_REASON_MEANINGS: Record<LeadNullReason, string> = {
  insufficient_pairs: `fewer than ${MIN_PAIRS} (score, return) pairs`,
  no_variation: `${MIN_PAIRS} or more pairs, but the scores or the returns do not vary (or their spread is beyond the range of a double)`,
};
const leadReasons = LEAD_NULL_REASONS.map((r) => `${r}: ${LEAD_REASON_MEANINGS[r]}`).join('; ');

/** Why one lag's correlation is null; null when it is a number. */
export function lagReason(correlation: number | null, sampleSize: number): LeadNullReason | null {
  if (correlation !== null) return null;
  return sampleSize < MIN_PAIRS ? 'insufficient_pairs' : 'no_variation';
}

/** Why a lead has no peak (no lag has a correlation): no_variation when some lag had the pairs, else insufficient_pairs; null when it has one. */
export function leadReason(lags: { correlation: number | null; sampleSize: number }[]): LeadNullReason | null {
  if (lags.some((l) => l.correlation !== null)) return null;
  return lags.some((l) => l.sampleSize >= MIN_PAIRS) ? 'no_variation' : 'insufficient_pairs';
}

export const SourceLeadSchema = z
  .strictObject({
    source: z.string(),
    subjectClass: SubjectClassSchema,
    bestLagDays: z
      .int()
      .min(0)
      .max(MAX_LAG_DAYS)
      .nullable()
      .describe(`the lag, 0..${MAX_LAG_DAYS} sessions, of the highest correlation (signed; the shorter lag on a tie); null when no lag has one`),
    peakCorrelation: z.number().nullable().describe('the correlation at bestLagDays'),
    sampleSize: z.int().min(0).nullable().describe('the (score, return) pairs at bestLagDays'),
    reason: z
      .enum(LEAD_NULL_REASONS)
      .nullable()
      .describe(
        `why bestLagDays, peakCorrelation and sampleSize are null (no lag has a correlation): no_variation when some lag has ${MIN_PAIRS} pairs or more, else insufficient_pairs; null when they are numbers. ${leadReasons}`,
      ),
    isPromotionEligible: z.boolean().describe('the verdict under meta.rule; never true for market_commentary'),
    correlationByLag: z
      .array(
        z.strictObject({
          lagDays: z.int().min(0).max(MAX_LAG_DAYS),
          correlation: z.number().nullable().describe('null, with the reason, when it cannot be computed'),
          sampleSize: z.int().min(0),
          reason: z.enum(LEAD_NULL_REASONS).nullable().describe(`why correlation is null; null when it is a number. ${leadReasons}`),
        }),
      )
      .length(LAGS)
      .describe('the whole curve, lag 0 to 10'),
    instruments: z.int().min(0).describe('instruments with a score of this source and subject class'),
    firstAsOfDate: z.string(),
    lastAsOfDate: z.string(),
  })
  .meta({ id: 'SourceLead' });

export type SourceLead = z.infer<typeof SourceLeadSchema>;

export const RETURN_DEFINITION =
  `Pooled over every instrument with scores of the source and subject class: the Pearson correlation, at each lag L = 0..${MAX_LAG_DAYS}, ` +
  'between a score and the simple return close(s_L) / close(s_L−1) − 1 on adjusted daily closes (corporate actions known now, backfilled ones left out), ' +
  "where sessions are the days with a bar of the instrument and s_0 is the last session on or before the score's asOfDate " +
  `(none when the stored bars leave a gap of more than ${SESSION_LOOKBACK_DAYS} calendar days there). L = 0 is the move of the score's own session.`;

export const SourceLeadsMetaSchema = z.strictObject({
  asOf: z.string().describe('the time of the read'),
  source: z.string().describe("the rows' sources, comma-separated; none when no row"),
  ...staleMetaFields(
    SILENCE_STALE_REASONS,
    `source_silent when a returned lead's lastAsOfDate is more than ${SOURCE_SILENCE_DAYS} days before the UTC day of the read: its source has stopped; ` +
      'no_source when no lead matches',
  ),
  rule: z
    .strictObject({
      minSampleSize: z.int().min(0),
      minCorrelation: z.number(),
      alpha: z.number().describe('family-wise, one-sided; each lag is tested at alpha / lagsSearched (Bonferroni)'),
      lagsSearched: z.int().min(1),
      minLagDays: z.int().min(0).max(MAX_LAG_DAYS).describe('a peak at lag 0 is the score’s own session, not a lead'),
      subjectClasses: z.array(SubjectClassSchema).describe('the subject classes that may be eligible'),
    })
    .describe(
      'eligible when the subject class is listed, bestLagDays ≥ minLagDays, sampleSize ≥ minSampleSize, peakCorrelation ≥ minCorrelation, ' +
        'and the one-sided p-value of t = r·√(n−2)/√(1−r²) on Student’s t (n−2 degrees of freedom) is below alpha / lagsSearched',
    ),
  returnDefinition: z.string(),
});

export const SOURCE_LEADS_RULE = { ...PROMOTION_RULE, subjectClasses: [...PROMOTION_RULE.subjectClasses] };

/** What deriving the source leads stored: one row per (source, subject class) with scores. */
export const DerivedLeadsSchema = z.strictObject({
  ...ingestCounts,
  rows: z.int().min(0).describe('(source, subject class) pairs with scores'),
  removed: z.int().min(0).describe('stored leads of pairs that no longer have a score'),
});
