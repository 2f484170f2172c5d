import { ACTIONS_CHECK_MAX_AGE_DAYS, staleMetaFields } from '../core/freshness.ts';
import { z } from 'zod';
import { FiniteNumber, jsonCell } from '../ingest/fields.ts';
import { IdSchema, type InstrumentId, InstrumentIdSchema, nameBasedUuid } from '../core/ids.ts';
import { BooleanFlagSchema, whenParsed } from '../core/params.ts';
import { AsOfSchema, DateSchema, InstantSchema, withOrderedBounds } from '../core/time.ts';
import { ACTION_KINDS, PROVENANCES, ProvenanceCountsSchema } from '../price-history/schema.ts';

export const CorporateActionsQuerySchema = withOrderedBounds(
  z.strictObject({
    from: DateSchema.describe('effective date, inclusive'),
    to: DateSchema.describe('effective date, inclusive'),
    asOf: AsOfSchema.optional().describe('knowledge cut-off'),
    includeBackfilled: BooleanFlagSchema.default(false),
    actionSetVersion: z.coerce.number({ error: 'must be an integer' }).int('must be an integer').min(0).optional(),
  }),
);

export type CorporateActionsQuery = z.infer<typeof CorporateActionsQuerySchema>;

const params = z.record(z.string(), z.unknown());

const paramsValue = jsonCell(params);

const Positive = FiniteNumber.refine((n) => n > 0, 'must be greater than 0');

/** A knowledge date given as a day means the end of that day (UTC), as for an announced dividend. */
const KnowledgeDateSchema = z.union([DateSchema.transform((d) => `${d}T23:59:59.999Z`), InstantSchema.transform((s) => new Date(s).toISOString())]);

export const CorporateActionRowSchema = z
  .strictObject({
    id: IdSchema.optional().describe('stable action id; derived from instrument, kind and effective date when absent'),
    instrumentId: InstrumentIdSchema,
    kind: z.enum(ACTION_KINDS),
    effectiveDate: DateSchema.describe('ex-date for distributions, first trading day for splits'),
    announcementDate: DateSchema.nullable()
      .optional()
      .transform((v) => v ?? null),
    knowledgeDate: KnowledgeDateSchema.nullable().describe('when it became knowable; null only for backfilled actions'),
    knowledgeProvenance: z.enum(PROVENANCES),
    params: paramsValue,
    source: z.string().trim().min(1).max(300),
  })
  .superRefine(
    (row, ctx) => {
      if ((row.knowledgeProvenance === 'backfilled') !== (row.knowledgeDate === null)) {
        ctx.addIssue({
          code: 'custom',
          path: ['knowledgeDate'],
          message: 'must be null exactly when knowledgeProvenance is backfilled (a backfilled action cannot be dated honestly)',
        });
      }
    },
    whenParsed('knowledgeProvenance', 'knowledgeDate'),
  )
  .superRefine(
    (row, ctx) => {
      if (row.kind === 'split' || row.kind === 'stock_dividend') {
        const r = Positive.safeParse(row.params.ratio);
        if (!r.success)
          ctx.addIssue({ code: 'custom', path: ['params', 'ratio'], message: 'ratio (new shares per old share) must be a number greater than 0' });
        else if (r.data === 1) ctx.addIssue({ code: 'custom', path: ['params', 'ratio'], message: 'a ratio of 1 changes nothing' });
      }
      if (row.kind === 'cash_dividend') {
        if (!Positive.safeParse(row.params.amount).success)
          ctx.addIssue({ code: 'custom', path: ['params', 'amount'], message: 'amount per share must be a number greater than 0' });
        if (typeof row.params.currency !== 'string' || !/^[A-Z]{3}$/.test(row.params.currency)) {
          ctx.addIssue({ code: 'custom', path: ['params', 'currency'], message: 'currency must be an ISO 4217 code' });
        }
      }
    },
    whenParsed('kind', 'params'),
  )
  .transform((row) => ({
    ...row,
    id: row.id ?? derivedActionId(row.instrumentId, row.kind, row.effectiveDate),
    params: normaliseParams(row.params),
  }));

/** Numbers in params are stored as numbers whatever the body format. */
function normaliseParams(p: Record<string, unknown>) {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(p)) out[k] = (k === 'ratio' || k === 'amount') && typeof v === 'string' ? Number(v) : v;
  return out;
}

/** Deterministic id so re-posting an action without an id is idempotent. */
export function derivedActionId(instrumentId: InstrumentId, kind: string, effectiveDate: string): string {
  return nameBasedUuid(`corporate-action:${instrumentId}:${kind}:${effectiveDate}`);
}

export const CoverageCheckRowSchema = z.strictObject({
  instrumentId: InstrumentIdSchema,
  checkedAt: InstantSchema.describe('when the action history was checked against the source'),
  source: z.string().trim().min(1).max(300),
  coveredFrom: DateSchema.describe('the check is complete for effective dates on or after this day'),
  actionsFound: z.union([z.number().int().min(0), z.string().regex(/^\d+$/, 'must be a whole number').transform(Number)]),
});

export type CorporateActionRow = z.infer<typeof CorporateActionRowSchema>;
export type CoverageCheckRow = z.infer<typeof CoverageCheckRowSchema>;

export const CorporateActionsMetaSchema = z.strictObject({
  asOf: z.string(),
  source: z.string(),
  ...staleMetaFields(
    ['actions_never_checked', 'actions_check_old'],
    `the instrument's action history was never checked against a source by the read's instant, or last checked more than ${ACTIONS_CHECK_MAX_AGE_DAYS} days before it`,
  ),
  actionSetVersion: z.int().min(0),
  includeBackfilled: z.boolean(),
  provenance: ProvenanceCountsSchema,
});
