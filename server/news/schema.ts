import { z } from 'zod';
import { SILENCE_STALE_REASONS, SOURCE_SILENCE_DAYS, staleMetaFields } from '../core/freshness.ts';
import { BooleanValue } from '../ingest/fields.ts';
import { IdSchema, type InstrumentId, InstrumentIdSchema, nameBasedUuid } from '../core/ids.ts';
import { CursorSchema, NextCursorSchema } from '../core/cursor.ts';
import { integerParam } from '../core/params.ts';
import { DateSchema, InstantSchema, withOrderedBounds } from '../core/time.ts';

/** The longest event class stored: class names are identifiers, not prose. */
export const MAX_EVENT_CLASS_LENGTH = 64;

/**
 * A news item's class: an open vocabulary, the source's own, compared exactly
 * (after trimming). Not a closed list as the economic calendar's: news
 * providers classify differently and a new class must not refuse a feed.
 */
const EVENT_CLASS =
  `the kind of news, an open vocabulary of 1..${MAX_EVENT_CLASS_LENGTH} characters compared exactly, e.g. earnings_release, guidance, ` +
  'merger_acquisition, product_launch, regulatory, litigation, management_change, dividend, buyback, analyst_rating';

export const EventClassSchema = z
  .string()
  .trim()
  .min(1, 'must not be empty')
  .max(MAX_EVENT_CLASS_LENGTH, `at most ${MAX_EVENT_CLASS_LENGTH} characters`)
  .describe(EVENT_CLASS);

/** An absolute http(s) URL as the source gave it (not normalised): a scheme, an authority, and no whitespace. */
const URL_RE = /^https?:\/\/[^\s/?#]+[^\s]*$/i;

export const NewsUrlSchema = z
  .string()
  .max(2048, 'at most 2048 characters')
  .regex(URL_RE, 'must be an absolute http or https URL without whitespace')
  .refine((s) => URL.canParse(s), 'is not a valid URL')
  .describe('the article, an absolute http(s) URL exactly as the source gave it');

export const NewsQuerySchema = withOrderedBounds(
  z.strictObject({
    from: DateSchema.optional().describe('first UTC day of publishedAt, inclusive'),
    to: DateSchema.optional().describe('last UTC day of publishedAt, inclusive'),
    eventClass: EventClassSchema.optional().describe('only this class (exact match); omit for all'),
    limit: integerParam(1, 500).default(100).describe('rows returned, newest first; meta.truncated says whether more matched, meta.nextCursor reads on'),
    cursor: CursorSchema,
  }),
);

export type NewsQuery = z.infer<typeof NewsQuerySchema>;

const HEADLINE = 'the headline as published';
const PUBLISHED_AT = 'when the source published it, UTC';
const IS_COMPANY_CONFIRMED =
  'true when the company itself stood behind it (an official release or filing); false for third-party reporting only. Catalyst events are the news with true.';

/**
 * The id a row without one gets: the name-based UUID (server/core/ids.ts) of
 * `news:` followed by the JSON array [instrumentId, source, url], so an item
 * posted again without an id, with its headline or class corrected, updates
 * the row it made before. The array keeps the parts apart: a source holding
 * ":" cannot run into the URL.
 */
export function derivedNewsId(instrumentId: InstrumentId, source: string, url: string): string {
  return nameBasedUuid(`news:${JSON.stringify([instrumentId, source, url])}`);
}

/** An admin row: the public fields but createdAt (the service's), `id` optional. */
export const NewsRowSchema = z
  .strictObject({
    id: IdSchema.optional().describe('derived from instrumentId, source and url when absent'),
    instrumentId: InstrumentIdSchema,
    eventClass: EventClassSchema,
    headline: z.string().trim().min(1, 'must not be empty').max(1000, 'at most 1000 characters').describe(HEADLINE),
    source: z.string().trim().min(1).max(300),
    url: NewsUrlSchema,
    publishedAt: InstantSchema.transform((s) => new Date(s).toISOString()).describe(PUBLISHED_AT),
    isCompanyConfirmed: BooleanValue.describe(IS_COMPANY_CONFIRMED),
  })
  .transform((row) => ({ ...row, id: row.id ?? derivedNewsId(row.instrumentId, row.source, row.url) }));

export type NewsRow = z.infer<typeof NewsRowSchema>;

/** One news item: the public row of GET /instruments/{id}/news and /events. */
export const NewsEventSchema = z
  .strictObject({
    id: z.string().describe('given at ingest, or derived from instrumentId, source and url'),
    instrumentId: z.string(),
    eventClass: z.string().describe(EVENT_CLASS),
    headline: z.string().describe(HEADLINE),
    source: z.string(),
    url: z.string(),
    publishedAt: z.string().describe(PUBLISHED_AT),
    isCompanyConfirmed: z.boolean().describe(IS_COMPANY_CONFIRMED),
    createdAt: z.string().describe('when the service first stored it; a correction does not move it'),
  })
  .meta({ id: 'NewsEvent' });

export type NewsEvent = z.infer<typeof NewsEventSchema>;

export const NewsMetaSchema = z.strictObject({
  asOf: z.string().describe('the time of the read'),
  source: z.string(),
  ...staleMetaFields(
    SILENCE_STALE_REASONS,
    `source_silent when a source of the returned rows has published nothing, on any instrument, in the ${SOURCE_SILENCE_DAYS} days before the time of reading ` +
      '(an item counts from its publishedAt, once stored); without rows, when none of the sources that ever published news of the instrument ' +
      '(of eventClass when given; company-confirmed for events) has; no_source when none ever did',
  ),
  limit: z.int().min(1).max(500),
  truncated: z.boolean().describe('more rows matched than limit: meta.nextCursor reads on'),
  nextCursor: NextCursorSchema,
});
