import { z } from 'zod';
import { staleMetaFields } from '../core/freshness.ts';
import { BooleanValue, jsonCell } from '../ingest/fields.ts';
import { instrumentIdListSchema, InstrumentIdSchema } from '../core/ids.ts';
import { AsOfSchema, DateSchema } from '../core/time.ts';
import { CursorSchema, NextCursorSchema } from '../core/cursor.ts';
import { integerParam, refuseBothNames, whenParsed } from '../core/params.ts';

export const ASSET_CLASSES = ['equity', 'etf', 'index', 'crypto', 'fx', 'future', 'metal', 'other', 'fund', 'bond'] as const;
export const AssetClassSchema = z.enum(ASSET_CLASSES);

export const MAX_BULK_IDS = 500;

/** The most instruments one page of a search returns; meta.nextCursor reads on. */
export const MAX_SEARCH_LIMIT = 100;

export const InstrumentSearchSchema = z
  .strictObject({
    query: z.string().min(1, 'must not be empty').max(100).optional().describe('free text over symbol and display name'),
    brokerCode: z.string().min(1, 'must not be empty').max(100).optional().describe('exact broker code, case and punctuation included'),
    broker: z.string().min(1, 'must not be empty').max(100).optional().describe('the broker whose namespace brokerCode belongs to'),
    assetClass: AssetClassSchema.optional(),
    asOf: AsOfSchema.optional(),
    limit: integerParam(1, MAX_SEARCH_LIMIT)
      .default(25)
      .describe('instruments returned per page (beyond the spec); meta.truncated says whether more matched, meta.nextCursor reads on'),
    cursor: CursorSchema,
  })
  .superRefine(
    (q, ctx) => {
      const reverse = q.brokerCode !== undefined || q.broker !== undefined;
      if (q.query !== undefined && reverse) {
        ctx.addIssue({ code: 'custom', path: ['query'], message: 'query and brokerCode/broker are exclusive; request exactly one mode' });
      } else if (q.query === undefined && !reverse) {
        ctx.addIssue({ code: 'custom', path: ['query'], message: 'request exactly one mode: query, or brokerCode with broker' });
      } else if (reverse && q.brokerCode === undefined) {
        ctx.addIssue({ code: 'custom', path: ['brokerCode'], message: 'required with broker' });
      } else if (reverse && q.broker === undefined) {
        ctx.addIssue({ code: 'custom', path: ['broker'], message: 'required with brokerCode; there is no default broker' });
      }
    },
    whenParsed('query', 'brokerCode', 'broker'),
  );

// ids is the specification's name; instrumentIds, the word the other lists of
// instruments use, is accepted for it.
export const InstrumentBulkSchema = z
  .strictObject({
    ids: instrumentIdListSchema(MAX_BULK_IDS).optional().describe(`comma-separated instrument ids, 1 to ${MAX_BULK_IDS} (alias: instrumentIds); required`),
    instrumentIds: instrumentIdListSchema(MAX_BULK_IDS).optional().describe('the same as ids, by the name the other lists of instruments use'),
  })
  .superRefine((q, ctx) => {
    refuseBothNames(q, ctx, [['ids', 'instrumentIds']]);
    if (q.ids === undefined && q.instrumentIds === undefined)
      ctx.addIssue({ code: 'custom', path: ['ids'], message: 'required: the instrument ids, comma-separated (or as instrumentIds)' });
  }, whenParsed())
  .transform((q) => ({ ids: q.ids ?? q.instrumentIds ?? [] }));

const SymbolPeriodSchema = z
  .strictObject({
    symbol: z.string().trim().min(1).max(32),
    validFrom: DateSchema.nullable().describe('first day under this symbol; null when it predates the recorded history'),
    validTo: DateSchema.nullable().optional().describe('last day the symbol was used (inclusive); null while current'),
  })
  .refine((s) => !s.validTo || !s.validFrom || s.validTo >= s.validFrom, {
    path: ['validTo'],
    message: 'must not be before validFrom',
    ...whenParsed('validFrom', 'validTo'),
  });

const optionalText = z.string().trim().min(1).max(200).nullable().optional();

/**
 * One instrument as the admin API takes it: the Instrument that GET returns
 * is accepted as it is. Its two derived fields are checked, not stored:
 * currentSymbol against the symbol history (in the ingest transaction),
 * vendorCode against brokerCodes (here). `symbols` may be left out for an
 * instrument already stored (GET does not return the history): its stored
 * history is kept.
 */
export const InstrumentIngestSchema = z
  .strictObject({
    id: InstrumentIdSchema.optional().describe(
      'the instrument to update; without it the row is a new instrument, refused when one of its symbols is held on the same days by another of the same asset class and exchange',
    ),
    assetClass: AssetClassSchema,
    displayName: z.string().trim().min(1).max(300),
    exchange: optionalText,
    region: optionalText,
    isin: z
      .string()
      .regex(/^[A-Z]{2}[A-Z0-9]{9}\d$/, 'must be a 12-character ISIN')
      .nullable()
      .optional(),
    cusip: z
      .string()
      .regex(/^[A-Z0-9]{9}$/, 'must be a 9-character CUSIP')
      .nullable()
      .optional(),
    distributionPolicy: z.enum(['accumulating', 'distributing']).nullable().optional(),
    quoteCurrency: z
      .string()
      .regex(/^[A-Z]{3}$/, 'must be an ISO 4217 code')
      .nullable()
      .optional(),
    quoteUnit: optionalText,
    isActive: BooleanValue.default(true),
    brokerCodes: jsonCell(z.record(z.string().min(1).max(100), z.string().min(1).max(100))).default({}),
    brokerCodesSource: z
      .string()
      .trim()
      .min(1)
      .max(300)
      .nullable()
      .optional()
      .describe(
        "where brokerCodes came from (the demo's are synthetic-demo); absent or null: a code stored before keeps its source, a new one is mds-reference. Reads name it in meta.source",
      ),
    symbols: jsonCell(z.array(SymbolPeriodSchema).min(1, 'at least one symbol period'))
      .nullable()
      .optional()
      .describe('the whole symbol history, replacing the stored one; a stored instrument may leave it out (or null) to keep its history'),
    currentSymbol: z
      .string()
      .trim()
      .min(1)
      .max(32)
      .nullable()
      .optional()
      .describe('read-only (as GET returns it): checked against the symbol history, not stored'),
    vendorCode: z.string().min(1).max(100).nullable().optional().describe('read-only (as GET returns it): checked against brokerCodes, not stored'),
  })
  .superRefine((row, ctx) => {
    const periods = [...(row.symbols ?? [])].sort((a, b) => (a.validFrom ?? '').localeCompare(b.validFrom ?? ''));
    for (let i = 1; i < periods.length; i++) {
      const prevEnd = periods[i - 1].validTo;
      const from = periods[i].validFrom;
      if (prevEnd === null || prevEnd === undefined || from === null || prevEnd >= from) {
        ctx.addIssue({ code: 'custom', path: ['symbols'], message: `symbol periods overlap at ${periods[i].validFrom}` });
      }
    }
  }, whenParsed('symbols'))
  .superRefine(
    (row, ctx) => {
      // vendorCode is brokerCodes[VENDOR_CODE_BROKER], a server setting that
      // ingest does not read: a code that none of the row's brokers has
      // contradicts brokerCodes whatever that setting is.
      if (row.vendorCode && !Object.values(row.brokerCodes).includes(row.vendorCode)) {
        ctx.addIssue({ code: 'custom', path: ['vendorCode'], message: "is read-only and must be one of brokerCodes' codes; change the code in brokerCodes" });
      }
    },
    whenParsed('vendorCode', 'brokerCodes'),
  );

export type InstrumentIngestRow = z.infer<typeof InstrumentIngestSchema>;

export const InstrumentSchema = z
  .strictObject({
    id: z.string(),
    assetClass: AssetClassSchema,
    displayName: z.string(),
    exchange: z.string().nullable(),
    region: z.string().nullable(),
    isin: z.string().nullable(),
    cusip: z.string().nullable(),
    distributionPolicy: z.enum(['accumulating', 'distributing']).nullable(),
    quoteCurrency: z.string().nullable(),
    quoteUnit: z.string().nullable(),
    isActive: z.boolean(),
    currentSymbol: z.string().nullable().describe('the symbol valid on the day read (the asOf day for a search); null when no period covers it'),
    brokerCodes: z.record(z.string(), z.string()).describe('broker name → code'),
    vendorCode: z.string().nullable().describe('the code of the broker configured as VENDOR_CODE_BROKER, if the instrument has one'),
  })
  .meta({ id: 'Instrument' });

export type Instrument = z.infer<typeof InstrumentSchema>;

const referenceMeta = {
  asOf: z.string().describe('when the answer was read, or the asOf asked for'),
  source: z.string().describe("mds-reference (the instrument master) and the sources of the rows' broker codes, comma-separated; none without rows"),
  ...staleMetaFields(
    ['symbol_history_lapsed'],
    'a returned instrument is marked active but no symbol period covers the read’s day (the asOf day for a search, else today, UTC)',
  ),
};

export const InstrumentSearchMetaSchema = z.strictObject({
  ...referenceMeta,
  mode: z.enum(['search', 'reverse_lookup']),
  limit: z.int().min(1).max(MAX_SEARCH_LIMIT),
  truncated: z.boolean().describe('more instruments matched than limit: meta.nextCursor reads on'),
  nextCursor: NextCursorSchema,
});
export const InstrumentBulkMetaSchema = z.strictObject({
  ...referenceMeta,
  requested: z.int().min(1).max(MAX_BULK_IDS),
  found: z.int().min(0).max(MAX_BULK_IDS),
});
export const InstrumentMetaSchema = z.strictObject(referenceMeta);
