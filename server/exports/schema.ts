import { z } from 'zod';
import { CursorSchema, NextCursorSchema } from '../core/cursor.ts';
import { IdSchema, InstrumentIdSchema } from '../core/ids.ts';
import { closedEnum, integerParam, whenParsed } from '../core/params.ts';
import { AsOfSchema, DateSchema } from '../core/time.ts';
import { dateRange, INTERVALS, MAX_SPAN_DAYS } from '../prices/schema.ts';

/** Instruments one export may name; absent, it takes every instrument. */
export const MAX_EXPORT_INSTRUMENTS = 5_000;

// An intraday export is read a calendar month per instrument at a time, so
// each read stays within the intraday route's own span limit, and written a
// file per month. Its window is capped per interval at about 530,000 bars per
// instrument for a 24-hour market (a year of 1-minute bars), 12 times the
// intraday route's bound: with 5,000 instruments that bounds one job's rows
// without bounding the memory, which a month's read of one instrument does.
export const MAX_EXPORT_INTRADAY_SPAN_DAYS: Record<(typeof INTERVALS)[number], number> = {
  '1min': 366,
  '5min': 5 * 366,
  '15min': 15 * 366,
  '30min': MAX_SPAN_DAYS,
  '1hour': MAX_SPAN_DAYS,
};

export const DATASETS = ['daily-prices', 'intraday-bars'] as const;
export const EXPORT_FORMATS = ['parquet', 'arrow', 'csv'] as const;
export const COMPRESSIONS = ['zstd', 'gzip', 'none'] as const;
export const EXPORT_STATUSES = ['queued', 'running', 'ready', 'failed', 'cancelled', 'expired'] as const;

export type Dataset = (typeof DATASETS)[number];
export type ExportFormat = (typeof EXPORT_FORMATS)[number];
export type Compression = (typeof COMPRESSIONS)[number];
export type ExportStatus = (typeof EXPORT_STATUSES)[number];

const customIssue = (ctx: z.RefinementCtx, path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });

export const ExportRequestSchema = z
  .strictObject({
    dataset: closedEnum(DATASETS).describe(
      'daily-prices: daily bars, one file per calendar year; intraday-bars: intraday bars, one file per calendar month (UTC)',
    ),
    instrumentIds: z
      .array(InstrumentIdSchema)
      .min(1, 'must list at least one id')
      .max(MAX_EXPORT_INSTRUMENTS, `at most ${MAX_EXPORT_INSTRUMENTS} ids per export`)
      .optional()
      .describe(`up to ${MAX_EXPORT_INSTRUMENTS} instrument ids, duplicates collapsed; absent: every instrument`),
    from: DateSchema.describe('first date, inclusive'),
    to: DateSchema.describe('last date, inclusive'),
    adjusted: z.boolean().optional().describe('daily-prices only: adjusted backward for splits and dividends as known at asOf (default false)'),
    asOf: AsOfSchema.optional().describe(
      'point-in-time cut-off, not after the request: each bar as it was known then. Absent: the instant the job was accepted, which the job then names, so the same request with that asOf gives the same bytes',
    ),
    includeBackfilled: z.boolean().optional().describe('daily-prices only: apply backfilled actions too (default false)'),
    interval: closedEnum(INTERVALS).optional().describe('intraday-bars only, and required there'),
    format: closedEnum(EXPORT_FORMATS).describe('parquet (zstd pages), arrow (IPC stream) or csv'),
    compression: closedEnum(COMPRESSIONS).optional().describe('csv only: the file is the compressed bytes (2012.csv.zst, 2012.csv.gz); default none'),
  })
  .superRefine(
    (r, ctx) => {
      if (r.dataset === 'daily-prices' && r.interval !== undefined) customIssue(ctx, 'interval', 'is for intraday-bars only');
      if (r.dataset === 'intraday-bars' && r.interval === undefined)
        customIssue(ctx, 'interval', `is required for intraday-bars: one of ${INTERVALS.join(', ')}`);
    },
    whenParsed('dataset', 'interval'),
  )
  .superRefine(
    (r, ctx) => {
      if (r.dataset !== 'intraday-bars') return;
      if (r.adjusted !== undefined) customIssue(ctx, 'adjusted', 'is for daily-prices only: intraday bars are never adjusted');
      if (r.includeBackfilled !== undefined) customIssue(ctx, 'includeBackfilled', 'is for daily-prices only');
    },
    whenParsed('dataset', 'adjusted', 'includeBackfilled'),
  )
  .superRefine(
    (r, ctx) => {
      if (r.compression !== undefined && r.compression !== 'none' && r.format !== 'csv')
        customIssue(ctx, 'compression', `is for csv only: ${r.format} compresses inside the file`);
    },
    whenParsed('compression', 'format'),
  )
  .superRefine(
    (r, ctx) => {
      // dataset and interval are read only as far as their values are tested: a
      // daily export's interval is refused above, and its span is still told.
      if (r.dataset === 'daily-prices') return dateRange(r, ctx, MAX_SPAN_DAYS);
      const interval =
        r.dataset === 'intraday-bars' && r.interval !== undefined && Object.hasOwn(MAX_EXPORT_INTRADAY_SPAN_DAYS, r.interval) ? r.interval : undefined;
      dateRange(r, ctx, interval && MAX_EXPORT_INTRADAY_SPAN_DAYS[interval], ` for ${interval} bars`);
    },
    whenParsed('from', 'to'),
  )
  .meta({ id: 'ExportRequest' });

export type ExportRequestInput = z.output<typeof ExportRequestSchema>;

/** The request as a job holds it: defaults written out, ids sorted and distinct, asOf pinned. */
export const NormalisedRequestSchema = z.strictObject({
  dataset: z.enum(DATASETS),
  instrumentIds: z.array(z.string()).nullable().describe('sorted and distinct; null: every instrument'),
  from: z.string(),
  to: z.string(),
  adjusted: z.boolean(),
  asOf: z.string().describe('the asOf asked for, else the instant the job was accepted'),
  includeBackfilled: z.boolean(),
  interval: z.enum(INTERVALS).nullable(),
  format: z.enum(EXPORT_FORMATS),
  compression: z.enum(COMPRESSIONS),
});

export type NormalisedRequest = z.output<typeof NormalisedRequestSchema>;

export const ExportFileSchema = z.strictObject({
  name: z.string().describe('2012.parquet, 2012.csv.zst, 2024-03.arrow, …: the year (daily) or month (intraday) of its bars'),
  rows: z.int().min(0),
  bytes: z.int().min(0),
  sha256: z.string().describe('hex SHA-256 of the bytes, also their ETag'),
  url: z.string().describe('a signed link to the bytes that works without the API key until expiresAt'),
});

export const ExportJobSchema = z
  .strictObject({
    id: z.string(),
    status: z.enum(EXPORT_STATUSES),
    request: NormalisedRequestSchema,
    actionSetVersions: z
      .record(z.string(), z.int().min(0))
      .nullable()
      .describe('instrument id → the action-set version its bars were read at (daily-prices); null before the job has read them, and for intraday-bars'),
    acceptedAt: z.string(),
    startedAt: z.string().nullable(),
    finishedAt: z.string().nullable(),
    expiresAt: z.string().nullable().describe('when a ready job’s files are deleted; null until it is ready'),
    progress: z.strictObject({
      filesDone: z.int().min(0),
      filesTotal: z.int().min(0).nullable().describe('null until the job has planned its files'),
      instrumentsDone: z.int().min(0).describe('instruments written into the first of the files being written (a job writes two at once)'),
      instrumentsTotal: z.int().min(0).nullable(),
      rowsDone: z.int().min(0),
    }),
    bytes: z.int().min(0).describe("the files' bytes stored so far, counted against the account's quota"),
    error: z.string().nullable().describe('why a failed job failed'),
    files: z.array(ExportFileSchema).describe('the manifest, in order, once ready; empty before'),
  })
  .meta({ id: 'ExportJob' });

export const ExportMetaSchema = z.strictObject({
  asOf: z.string().describe('when the job was read'),
  source: z.literal('mds-exports'),
  stale: z.boolean().describe('the job as the primary holds it when read: nothing it reports can be behind, so false'),
  staleReason: z.null().describe('null: nothing stored can make a job read stale'),
});

export const ExportListMetaSchema = z.strictObject({
  ...ExportMetaSchema.shape,
  limit: z.int().min(1).max(100),
  truncated: z.boolean().describe('more jobs than limit: meta.nextCursor reads on'),
  nextCursor: NextCursorSchema,
});

export const ExportParamsSchema = z.strictObject({ id: IdSchema });

// A file's name as the jobs make them, which also keeps anything else out of the statement.
export const FILE_NAME_RE = /^\d{4}(-\d{2})?\.(parquet|arrow|csv|csv\.gz|csv\.zst)$/;

export const ExportFileParamsSchema = z.strictObject({
  id: IdSchema,
  name: z.string().regex(FILE_NAME_RE, 'is not a file an export makes (e.g. 2012.parquet, 2024-03.csv.zst)'),
});

export const ExportFileQuerySchema = z.strictObject({
  expires: z
    .string()
    .regex(/^\d{1,12}$/, 'must be the expiry the link carries, in Unix seconds')
    .optional()
    .describe("a signed link's expiry (Unix seconds); with signature, instead of the API key"),
  signature: z
    .string()
    .regex(/^[A-Za-z0-9_-]{1,64}$/, 'is not a signature this service made')
    .optional()
    .describe("a signed link's signature (manifest url); never logged"),
});

export const ExportListQuerySchema = z.strictObject({
  limit: integerParam(1, 100).default(20).describe('jobs per page, newest first'),
  cursor: CursorSchema,
});
