import { z } from 'zod';
import { AsOfSchema, DateSchema } from '../core/time.ts';
import { refuseBothNames, whenParsed } from '../core/params.ts';

/** The only series served (the spec's allowlist). Any other id is refused before storage or the provider is asked. */
export const MACRO_SERIES_IDS = [
  'DGS1MO',
  'DGS3MO',
  'DGS6MO',
  'DGS1',
  'DGS2',
  'DGS5',
  'DGS10',
  'DGS20',
  'DGS30',
  'FEDFUNDS',
  'DFEDTARU',
  'DFEDTARL',
  'CPIAUCSL',
  'CPILFESL',
  'PCEPI',
  'PCEPILFE',
  'T5YIE',
  'T10YIE',
  'DFII5',
  'DFII10',
  'DFII20',
  'DFII30',
  'T10Y2Y',
  'T10Y3M',
  'DTWEXBGS',
  'UNRATE',
  'PAYEMS',
  'VIXCLS',
] as const;
export type MacroSeriesId = (typeof MACRO_SERIES_IDS)[number];

export const MACRO_FREQUENCIES = ['daily', 'weekly', 'biweekly', 'monthly', 'quarterly', 'semiannual', 'annual'] as const;
export type MacroFrequency = (typeof MACRO_FREQUENCIES)[number];

/** Why a stored copy was served without being refreshed. */
export const STALE_REASONS = ['no_provider_key', 'provider_unreachable', 'provider_error'] as const;
export type StaleReason = (typeof STALE_REASONS)[number];

const allowed = new Set<string>(MACRO_SERIES_IDS);

export const MacroSeriesParamsSchema = z.strictObject({
  seriesId: z
    .string()
    .transform((s) => s.toUpperCase())
    .refine((s): s is MacroSeriesId => allowed.has(s), `must be one of the served series: ${MACRO_SERIES_IDS.join(', ')}`)
    .describe('a series id of the allowlist (case-insensitive)'),
});

// start and end are the specification's names; from and to, the words every
// other date window of the API uses, are accepted for them.
export const MacroSeriesQuerySchema = z
  .strictObject({
    start: DateSchema.optional().describe('first observation date, inclusive; omit for the full history (alias: from)'),
    end: DateSchema.optional().describe('last observation date, inclusive; omit for the latest (alias: to)'),
    from: DateSchema.optional().describe('the same as start, by the name the other date windows use'),
    to: DateSchema.optional().describe('the same as end, by the name the other date windows use'),
  })
  .superRefine(
    (q, ctx) =>
      refuseBothNames(q, ctx, [
        ['start', 'from'],
        ['end', 'to'],
      ]),
    whenParsed(),
  )
  .superRefine(
    (q, ctx) => {
      // Named by the specification's words, whichever were sent.
      const [start, end] = [q.start ?? q.from, q.end ?? q.to];
      if (start !== undefined && end !== undefined && start > end) ctx.addIssue({ code: 'custom', path: ['end'], message: 'must be on or after start' });
    },
    whenParsed('start', 'end', 'from', 'to'),
  )
  .transform((q) => ({ start: q.start ?? q.from, end: q.end ?? q.to }));

export type MacroSeriesQuery = z.infer<typeof MacroSeriesQuerySchema>;

export const ObservationSchema = z.strictObject({ date: z.string().describe('observation date yyyy-mm-dd'), value: z.number() });

export const MacroSeriesSchema = z.strictObject({
  seriesId: z.enum(MACRO_SERIES_IDS),
  title: z.string(),
  units: z.string().describe("the provider's units, e.g. Percent, Index 1982-1984=100"),
  frequency: z.enum(MACRO_FREQUENCIES),
  observations: z.array(ObservationSchema).describe('ascending by date; a missing observation (FRED\'s ".") is absent, never 0'),
});
export type MacroSeries = z.infer<typeof MacroSeriesSchema>;

const CopyMetaFields = {
  stale: z.boolean().describe('true when the stored copy is past its freshness window and could not be refreshed'),
  staleReason: z.enum(STALE_REASONS).nullable().describe('why a stale copy was served; null when fresh'),
  providerUpdatedAt: z.string().nullable().describe("when the provider last revised the series (FRED's last_updated); null for the bundled demo copy"),
};

export const MacroSeriesMetaSchema = z.strictObject({
  asOf: z.string().describe('when the stored copy was fetched'),
  source: z.string().describe('fred, or the bundled snapshot the demo copy came from'),
  ...CopyMetaFields,
  seasonalAdjustment: z.string().nullable(),
  start: z.string().nullable(),
  end: z.string().nullable(),
});

export const RISK_FREE_SOURCES = ['fred', 'fallback'] as const;

/** The series a risk-free rate is read from (server/macro/risk-free-history.ts). */
export const RISK_FREE_SERIES = ['DGS3MO', 'TB3MS'] as const;

export const RiskFreeQuerySchema = z.strictObject({
  asOf: AsOfSchema.optional().describe(
    'point-in-time cut-off (a date means the end of that UTC day): the rate known then, from the stored history (TB3MS monthly averages from the first instant after their month, DGS3MO daily observations from the end of their UTC day); omit for the current rate',
  ),
});
export type RiskFreeQuery = z.infer<typeof RiskFreeQuerySchema>;

export const RiskFreeRateSchema = z.strictObject({
  rate: z.number().describe('annualised, as a decimal (FRED publishes percent: 4.37 → 0.0437)'),
  maturity: z.literal('3M').describe('the Treasury term'),
  asOf: z.string().describe('date of the observation yyyy-mm-dd (a monthly average is dated the first of its month)'),
  source: z
    .enum(RISK_FREE_SOURCES)
    .describe('fred: an observation of a FRED series (live, or stored history with asOf); fallback: a stand-in (meta.fallback says which and why)'),
  seriesId: z
    .enum(RISK_FREE_SERIES)
    .describe('DGS3MO (daily, constant maturity) or TB3MS (monthly average of the 3-month bill; the hard-coded stand-in is one)'),
  knownFrom: z.string().describe('the first instant the observation counts as known: the end of its UTC day (DGS3MO), or of its month (TB3MS)'),
});
export type RiskFreeRate = z.infer<typeof RiskFreeRateSchema>;

export const RISK_FREE_STAND_INS = ['last_stored_observation', 'hardcoded'] as const;

/** Why a stand-in was used: FRED could not serve (STALE_REASONS), or with asOf nothing stored known then is more recent. */
export const RISK_FREE_FALLBACK_REASONS = [...STALE_REASONS, 'no_stored_observation'] as const;

/** Why a risk-free answer is stale: FRED could not serve (STALE_REASONS), or with asOf a newer observation of the series was due by then. */
export const RISK_FREE_STALE_REASONS = [...STALE_REASONS, 'newer_observation_due'] as const;
export type RiskFreeStaleReason = (typeof RISK_FREE_STALE_REASONS)[number];

const RiskFreeFallbackSchema = z.strictObject({
  standIn: z.enum(RISK_FREE_STAND_INS).describe('which stand-in was used'),
  reason: z.enum(RISK_FREE_FALLBACK_REASONS),
  detail: z.string(),
});
export type RiskFreeFallback = z.infer<typeof RiskFreeFallbackSchema>;

export const RiskFreeMetaSchema = z.strictObject({
  asOf: z.string().describe('with asOf, the cut-off as given; without, when the observation was fetched (for the hard-coded rate, its observation date)'),
  source: z.string().describe('where the observation came from: fred (a fetched copy), the bundled snapshot, or the hard-coded stand-in'),
  stale: z
    .boolean()
    .describe(
      'without asOf: a stand-in was used. With asOf: a newer observation of the series was due by the cut-off (monthly: the previous month; daily: within 4 days)',
    ),
  staleReason: z.enum(RISK_FREE_STALE_REASONS).nullable().describe('why stale; null when not'),
  seriesId: z.enum(RISK_FREE_SERIES).describe('the series the rate comes from'),
  fallback: RiskFreeFallbackSchema.nullable().describe('null when source is fred'),
});
