import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { ACTION_KINDS } from '../price-history/schema.ts';
import { DateSchema, InstantSchema } from '../core/time.ts';
import { AssetClassSchema } from '../instruments/schema.ts';

/**
 * The curated files of the demo set in ./data (origin, licence and the
 * curator's sources in ./data/SOURCES.md), read and checked once: each file's
 * shape, then the keys that tie the files together. A mistake in a file stops
 * the load with the file and the field, before any row reaches the database.
 */

const Text = z.string().trim().min(1);
/** A curator's remark on one entry: why a date or a value is what it is. Never loaded into the database. */
const Note = Text.optional();

const SymbolPeriodSchema = z.strictObject({
  symbol: Text,
  /** First day under this symbol; null = before the demo's earliest data (listing dates are not curated). */
  validFrom: DateSchema.nullable(),
  /** Last day (inclusive); null = still in use. */
  validTo: DateSchema.nullable(),
});

const InstrumentEntrySchema = z.strictObject({
  /** Stable internal key; the instrument's UUID is derived from it. */
  key: Text,
  assetClass: AssetClassSchema,
  displayName: Text,
  /** ISO 10383 MIC of the primary listing; null for an index, a currency pair or a coin. */
  exchange: Text.nullable(),
  region: Text.nullable(),
  isin: z
    .string()
    .regex(/^[A-Z]{2}[A-Z0-9]{9}\d$/)
    .nullable(),
  cusip: z
    .string()
    .regex(/^[A-Z0-9]{9}$/)
    .nullable(),
  distributionPolicy: z.enum(['accumulating', 'distributing']).nullable(),
  quoteCurrency: z.string().regex(/^[A-Z]{3}$/),
  quoteUnit: Text,
  isActive: z.boolean(),
  /** Demo mappings, not taken from any broker's symbol file; empty for a delisted instrument. */
  brokerCodes: z.record(Text, Text),
  symbols: z.array(SymbolPeriodSchema).min(1),
  note: Note,
});

const SourceFields = {
  /** The `source` tag of every bar read from the file. */
  source: Text,
  file: z.string().regex(/^[\w.-]+\.csv$/),
  origin: Text,
  licence: Text,
  /** When the prices were captured, fixed per source (see SOURCES.md). */
  asOf: InstantSchema,
  /**
   * `raw`: prices as traded. `vendor_adjusted`: the vendor already applied
   * every split and dividend effective on or before `reflectsActionsThrough`.
   */
  priceBasis: z.enum(['raw', 'vendor_adjusted']),
  reflectsActionsThrough: DateSchema.nullable(),
  note: Note,
};

/** One instrument's OHLCV bars, one row a day; `columns` names the CSV column of each field. */
const OhlcvSourceSchema = z.strictObject({
  ...SourceFields,
  fields: z.literal('ohlcv'),
  instrumentKey: Text,
  columns: z.strictObject({ date: Text, open: Text, high: Text, low: Text, close: Text, volume: Text }),
});

/** Closes only, one column per instrument, one row a day. */
const CloseOnlySourceSchema = z.strictObject({
  ...SourceFields,
  fields: z.literal('close_only'),
  dateColumn: Text,
  instrumentByColumn: z.record(Text, Text),
  /** Rows left out, each explained in the note. */
  droppedDates: z.array(DateSchema),
});

const DailySourceEntrySchema = z.discriminatedUnion('fields', [OhlcvSourceSchema, CloseOnlySourceSchema]);

const ActionEntrySchema = z.strictObject({
  /** Stable key; the action's UUID is derived from it. */
  key: Text,
  instrumentKey: Text,
  kind: z.enum(ACTION_KINDS),
  /** Ex-date (first session trading without the entitlement). */
  effectiveDate: DateSchema,
  /** Declaration day; null for an action backfilled without one. */
  announcedOn: DateSchema.nullable(),
  params: z.record(z.string(), z.unknown()),
  /** The public record the action was taken from. */
  source: Text,
  note: Note,
});

const CoverageEntrySchema = z.strictObject({
  instrumentKey: Text,
  /** The horizon up to which the curated action set is complete: not the wall-clock time of curation. */
  checkedAt: InstantSchema,
  coveredFrom: DateSchema,
  source: Text,
  note: Note,
});

const CorporateActionsFileSchema = z.strictObject({
  actions: z.array(ActionEntrySchema),
  coverage: z.array(CoverageEntrySchema),
});

export type InstrumentEntry = z.infer<typeof InstrumentEntrySchema>;
export type SymbolPeriod = z.infer<typeof SymbolPeriodSchema>;
export type DailySourceEntry = z.infer<typeof DailySourceEntrySchema>;
export type OhlcvSource = z.infer<typeof OhlcvSourceSchema>;
export type CloseOnlySource = z.infer<typeof CloseOnlySourceSchema>;
export type ActionEntry = z.infer<typeof ActionEntrySchema>;
export type CoverageEntry = z.infer<typeof CoverageEntrySchema>;

export interface CatalogFiles {
  instruments: InstrumentEntry[];
  dailySources: DailySourceEntry[];
  actions: ActionEntry[];
  coverage: CoverageEntry[];
}

export const DEMO_DATA_DIR = new URL('./data/', import.meta.url);

export class CatalogFileError extends Error {}

function readJson<T>(dir: URL, file: string, schema: z.ZodType<T>): T {
  let value: unknown;
  try {
    value = JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
  } catch (err) {
    throw new CatalogFileError(`demo data ${file}: ${(err as Error).message}`);
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new CatalogFileError(`demo data ${file}:\n${z.prettifyError(parsed.error)}`);
  return parsed.data;
}

function duplicates(values: string[]): string[] {
  return [...new Set(values.filter((v, i) => values.indexOf(v) !== i))];
}

/** The keys that tie the files together: every reference resolves, and no key is used twice. */
function crossReferenceProblems(files: CatalogFiles): string[] {
  const problems: string[] = [];
  const instrumentKeys = new Set(files.instruments.map((i) => i.key));
  const unknownKey = (file: string, where: string, key: string) => {
    if (!instrumentKeys.has(key)) problems.push(`${file} ${where}: unknown instrument key ${JSON.stringify(key)}`);
  };
  for (const key of duplicates(files.instruments.map((i) => i.key))) problems.push(`instruments.json: key ${JSON.stringify(key)} is used twice`);
  for (const tag of duplicates(files.dailySources.map((s) => s.source))) problems.push(`daily-sources.json: source ${JSON.stringify(tag)} is listed twice`);
  for (const key of duplicates(files.actions.map((a) => a.key))) problems.push(`corporate-actions.json: action key ${JSON.stringify(key)} is used twice`);
  for (const key of duplicates(files.coverage.map((c) => c.instrumentKey)))
    problems.push(`corporate-actions.json: coverage of ${JSON.stringify(key)} is stated twice`);
  for (const s of files.dailySources) {
    if (s.fields === 'ohlcv') unknownKey('daily-sources.json', s.source, s.instrumentKey);
    else for (const [column, key] of Object.entries(s.instrumentByColumn)) unknownKey('daily-sources.json', `${s.source} column ${column}`, key);
  }
  for (const a of files.actions) unknownKey('corporate-actions.json', `action ${a.key}`, a.instrumentKey);
  for (const c of files.coverage) unknownKey('corporate-actions.json', 'coverage', c.instrumentKey);
  return problems;
}

/** Reads and checks the demo set's JSON files in `dir`; throws CatalogFileError naming each problem. */
export function readCatalogFiles(dir: URL = DEMO_DATA_DIR): CatalogFiles {
  const { actions, coverage } = readJson(dir, 'corporate-actions.json', CorporateActionsFileSchema);
  const files: CatalogFiles = {
    instruments: readJson(dir, 'instruments.json', z.array(InstrumentEntrySchema)),
    dailySources: readJson(dir, 'daily-sources.json', z.array(DailySourceEntrySchema)),
    actions,
    coverage,
  };
  const problems = crossReferenceProblems(files);
  if (problems.length) throw new CatalogFileError(`demo data:\n${problems.map((p) => `  ${p}`).join('\n')}`);
  return files;
}
