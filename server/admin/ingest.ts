import type { Writable } from 'node:stream';
import { z } from 'zod';
import type { Sql } from '../db/sql.ts';
import { AppError } from '../http/errors.ts';
import { hasNestedValue, mayHoldUnstorableText, unstorableText } from '../http/validate.ts';
import { parseCsvBatches } from './csv.ts';
import { ndjsonBatches } from './ndjson.ts';

/**
 * Batch ingest shared by every admin upload route, the CLI and the demo load.
 *
 * The body is parsed by Content-Type (JSON array, NDJSON or CSV) and streamed
 * in batches; each row is validated and encoded as a line of COPY text. The
 * whole upload is one transaction, so a bad row anywhere aborts it and nothing
 * is stored. Two shapes of kind:
 *
 * - keyed kinds (bars) name each row's (instrument, time) key. The service
 *   refuses a repeated key and an unknown instrument itself while streaming,
 *   and writes each batch as soon as it is complete (`writeBatch`), while the
 *   next batch is being parsed, so parsing and the database work overlap.
 *   Memory is bounded by two batches.
 * - other kinds stage every row (with its index) in a temporary table and
 *   `apply` checks and upserts the staged set at the end.
 */
export interface IngestKind<Row> {
  /** Used in messages: "daily bars". */
  label: string;
  rowSchema: z.ZodType<Row>;
  /** Column list of the temporary `ingest_staging` table (after `row_index integer` for unkeyed kinds). */
  stagingColumns: string;
  /** Values in staging column order; null for an absent value. */
  toStagingValues(row: Row): (string | number | boolean | null)[];
  /**
   * Optional hot path: a hand-written check that accepts only rows rowSchema
   * accepts and returns exactly what it would, or undefined to let rowSchema
   * decide (and word any error). Unit tests hold it to that against rowSchema.
   */
  fastRow?(raw: unknown): Row | undefined;
  key?: RowKey<Row>;
  /** Keyed kinds: writes one batch of staging-format COPY text; `state` lives for the whole upload. */
  writeBatch?(tx: Sql, batch: CopyBatch, state: Record<string, unknown>): Promise<WriteCounts>;
  /** Keyed kinds: extra result fields from the upload's first and last time ordinal. */
  summarise?(range: OrdinalRange): Record<string, unknown>;
  /** Unkeyed kinds: checks the staged rows against the database, then upserts. Throw AppError with the row index on a bad row. */
  apply?(tx: Sql): Promise<IngestResult>;
  /** Runs after the transaction commits (e.g. refreshing continuous aggregates, which refuse to run inside one). */
  afterCommit?(sql: Sql, result: IngestResult): Promise<void>;
}

export interface RowKey<Row> {
  /** The request field the time part comes from, for messages: "barDate". */
  field: string;
  instrumentId(row: Row): string;
  /** An integer position in time: days or minutes since 1970-01-01. */
  ordinal(row: Row): number;
}

export interface OrdinalRange {
  first: number;
  last: number;
}

export interface CopyBatch extends OrdinalRange {
  /** COPY text (tab-separated, \N for null), one line per row, in staging column order. */
  text: string;
  rows: number;
}

export interface WriteCounts {
  inserted: number;
  updated: number;
}

export interface IngestResult {
  rows: number;
  inserted: number;
  updated: number;
  unchanged: number;
  [extra: string]: unknown;
}

export type BodyFormat = 'json' | 'ndjson' | 'csv';

export function formatOf(contentType: string | undefined): BodyFormat {
  const type = (contentType ?? '').split(';')[0].trim().toLowerCase();
  if (type === 'application/json') return 'json';
  if (type === 'application/x-ndjson' || type === 'application/ndjson' || type === 'application/jsonl') return 'ndjson';
  if (type === 'text/csv') return 'csv';
  throw new AppError('unsupported_media_type', 'send application/json (an array), application/x-ndjson or text/csv', {
    'content-type': [`unsupported: ${type || '(none)'}`],
  });
}

// A JSON array body is parsed whole; larger uploads should use NDJSON or CSV.
const MAX_JSON_BYTES = 64 * 1024 * 1024;
const ROWS_PER_BATCH = 5_000;

async function* jsonBatches(body: AsyncIterable<Buffer | string>): AsyncGenerator<unknown[]> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_JSON_BYTES) throw new AppError('payload_too_large', `JSON bodies are limited to ${MAX_JSON_BYTES / 1024 / 1024} MiB; send NDJSON or CSV for larger batches`);
    chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new AppError('invalid_request', 'request body is not valid JSON', { body: ['malformed JSON'] });
  }
  if (!Array.isArray(parsed)) throw new AppError('invalid_request', 'the body must be a JSON array of rows', { body: ['expected an array'] });
  yield* batchesOf(parsed);
}

/** Groups rows (an array, or any iterable) into ingest batches. */
export function* batchesOf<T>(rows: Iterable<T>): Generator<T[]> {
  let batch: T[] = [];
  for (const row of rows) {
    batch.push(row);
    if (batch.length === ROWS_PER_BATCH) {
      yield batch;
      batch = [];
    }
  }
  if (batch.length) yield batch;
}

export function batchesFrom(body: AsyncIterable<Buffer | string>, format: BodyFormat): AsyncGenerator<unknown[]> {
  return format === 'json' ? jsonBatches(body) : format === 'ndjson' ? ndjsonBatches(body) : parseCsvBatches(body);
}

const NEEDS_COPY_ESCAPE = /[\\\t\n\r]/;

/** One COPY text field. Text never holds NUL here: ingestRows refuses such a row before encoding it. */
function copyField(v: string | number | boolean | null): string {
  if (v === null) return '\\N';
  if (typeof v !== 'string') return String(v);
  if (!NEEDS_COPY_ESCAPE.test(v)) return v;
  return v.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

/**
 * One COPY line without its newline. Built by join, so it is one flat string:
 * concatenation would leave a rope of ~30 pieces per row alive until the
 * batch is sent, which the garbage collector then promotes and scans.
 */
function copyLine(values: (string | number | boolean | null)[]): string {
  const fields = new Array<string>(values.length);
  for (let i = 0; i < values.length; i++) fields[i] = copyField(values[i]);
  return fields.join('\t');
}

/**
 * Sends COPY text into `target` (`table (columns)` or a table name) inside
 * the transaction, and settles with the server's verdict.
 *
 * postgres.js resolves a COPY query with its stream as soon as the server
 * accepts the data; an error the server raises after the end of the data
 * (a unique violation, a constraint) goes to the query's own reject, which is
 * then a no-op, and the stream's end callback never fires. Wrapping that
 * reject surfaces the error (with its SQLSTATE) instead of waiting forever;
 * test/integration/ingest.test.ts holds this to the library's behaviour.
 */
export async function copyInto(tx: Sql, target: string, text: string): Promise<void> {
  const query = tx.unsafe(`copy ${target} from stdin`) as unknown as { reject(err: unknown): void; writable(): Promise<Writable> };
  if (typeof query.reject !== 'function') throw new Error('postgres.js no longer exposes Query.reject; copyInto needs revisiting');
  const failed = new Promise<never>((_, reject) => {
    const original = query.reject.bind(query);
    query.reject = (err) => {
      reject(err);
      original(err);
    };
  });
  failed.catch(() => {}); // observed by the race below, or by the awaited writable()
  const writable = await query.writable();
  await Promise.race([
    failed,
    new Promise<void>((resolve, reject) => {
      writable.once('error', reject);
      writable.end(text, resolve);
    }),
  ]);
}

// A batch is written once its COPY text reaches this size: large enough that
// the per-statement cost is noise, small enough that two batches in memory
// stay a few MB.
const COPY_BATCH_BYTES = 4 * 1024 * 1024;

function invalidRow(kind: { label: string }, index: number, issues: readonly z.core.$ZodIssue[]) {
  const details: Record<string, string[]> = {};
  for (const issue of issues) {
    const key = [`rows[${index}]`, ...issue.path.map(String)].join('.');
    (details[key] ??= []).push(issue.message);
  }
  return new AppError('invalid_request', `row ${index} of the ${kind.label} batch is invalid; nothing was stored`, details);
}

/** Throws the 400 naming each field of the row PostgreSQL could not store (see unstorableText), if any. */
function refuseUnstorable(kind: { label: string }, index: number, row: unknown) {
  const problems = unstorableText(row);
  if (!problems) return;
  const details = Object.fromEntries(Object.entries(problems).map(([path, messages]) => [path === '_' ? `rows[${index}]` : `rows[${index}].${path}`, messages]));
  throw new AppError('invalid_request', `row ${index} of the ${kind.label} batch holds text PostgreSQL cannot store; nothing was stored`, details);
}

/** Ingests batches of raw rows in one transaction; see IngestKind. */
export async function ingestRows<Row>(sql: Sql, kind: IngestKind<Row>, batches: AsyncIterable<readonly unknown[]> | Iterable<readonly unknown[]>): Promise<IngestResult> {
  const key = kind.key;
  if (key ? !kind.writeBatch : !kind.apply) throw new Error(`ingest kind ${kind.label}: keyed kinds need writeBatch, others apply`);
  const result = await sql.begin(async (tx) => {
    // The upload lasts as long as the client sends; the service-wide statement
    // timeout is for queries, not for streaming a large batch.
    await tx`set local statement_timeout = 0`;
    // Each batch repeats the same statements with new bounds. After five runs
    // PostgreSQL may switch a prepared statement to a generic plan that cannot
    // see the bounds (no chunk exclusion, guessed row counts); measured, one
    // such plan turned a 3 s rollup refresh into 160 s. Plan every run afresh.
    await tx`set local plan_cache_mode = force_custom_plan`;
    await tx.unsafe(`create temp table ingest_staging (${key ? '' : 'row_index integer not null, '}${kind.stagingColumns}) on commit drop`);
    const keys = key ? new RowKeys() : null;
    const counts: WriteCounts = { inserted: 0, updated: 0 };
    const state: Record<string, unknown> = {};
    let index = 0;
    // The batch's COPY lines, joined when it is written.
    let lines: string[] = [];
    let bytes = 0;
    // Time ordinals of the batch being built and of the whole upload (keyed kinds).
    let batchRange: OrdinalRange = { first: Infinity, last: -Infinity };
    const uploadRange: OrdinalRange = { first: Infinity, last: -Infinity };
    // The previous batch's write, running while the next batch is parsed.
    let writing: Promise<void> = Promise.resolve();

    const write = async (batch: CopyBatch) => {
      if (!keys) return copyInto(tx as unknown as Sql, 'ingest_staging', batch.text);
      await rejectNewUnknownInstruments(tx as unknown as Sql, keys);
      const written = await kind.writeBatch!(tx as unknown as Sql, batch, state);
      counts.inserted += written.inserted;
      counts.updated += written.updated;
    };
    const flush = async () => {
      uploadRange.first = Math.min(uploadRange.first, batchRange.first);
      uploadRange.last = Math.max(uploadRange.last, batchRange.last);
      await writing;
      lines.push('');
      writing = write({ text: lines.join('\n'), rows: lines.length - 1, ...batchRange });
      writing.catch(() => {}); // observed by the next flush or the final await
      lines = [];
      bytes = 0;
      batchRange = { first: Infinity, last: -Infinity };
    };

    try {
      for await (const batch of batches) {
        for (const raw of batch) {
          let row = kind.fastRow?.(raw);
          if (row === undefined) {
            const parsed = kind.rowSchema.safeParse(raw);
            if (!parsed.success) throw invalidRow(kind, index, parsed.error.issues);
            row = parsed.data;
          }
          if (keys) {
            const ordinal = key!.ordinal(row);
            if (!keys.add(key!.instrumentId(row), ordinal, index)) {
              throw rowError(index, key!.field, 'duplicates an earlier row of this batch');
            }
            if (ordinal < batchRange.first) batchRange.first = ordinal;
            if (ordinal > batchRange.last) batchRange.last = ordinal;
          }
          // Text PostgreSQL cannot store is refused by field, on the parsed row,
          // so a NUL in a CSV cell's JSON text (brokerCodes, symbols, params)
          // is seen too. A row with nested values is scanned before they are
          // serialised (JSON.stringify overflows on 10,000 levels). For the
          // rest, every text column is in the COPY line, and one test of it
          // stands in for the scan: on the daily-bar CSV path 0.3 s per
          // million rows against 3.0 s for the scan (7.2 s without either).
          if (hasNestedValue(row as object)) refuseUnstorable(kind, index, row);
          const line = copyLine(kind.toStagingValues(row));
          if (mayHoldUnstorableText(line)) refuseUnstorable(kind, index, row);
          lines.push(keys ? line : `${index}\t${line}`);
          bytes += line.length + 1;
          index++;
        }
        if (bytes >= COPY_BATCH_BYTES) await flush();
      }
      if (index === 0) throw new AppError('invalid_request', `the ${kind.label} batch is empty`, { body: ['no rows'] });
      if (lines.length) await flush();
      await writing;
    } catch (err) {
      await writing.catch(() => {});
      throw err;
    }
    if (keys) return { rows: index, ...counts, unchanged: index - counts.inserted - counts.updated, ...kind.summarise?.(uploadRange) };
    await tx`analyze ingest_staging`;
    return kind.apply!(tx as unknown as Sql);
  });
  await kind.afterCommit?.(sql, result);
  return result;
}

/**
 * The keys of a keyed upload: per instrument, a bitmap of the time ordinals
 * seen (pages of 4,096, so ten years of daily bars are one 512-byte page and a
 * year of minutes 64 KB), and the instruments not yet looked up, each with the
 * first row naming it.
 */
export class RowKeys {
  private readonly pages = new Map<string, Map<number, Uint32Array>>();
  private unchecked: { id: string; firstRow: number }[] = [];

  /** Records a key; false when the upload already had it. */
  add(instrumentId: string, ordinal: number, row: number): boolean {
    let pages = this.pages.get(instrumentId);
    if (!pages) {
      pages = new Map();
      this.pages.set(instrumentId, pages);
      this.unchecked.push({ id: instrumentId, firstRow: row });
    }
    const page = Math.floor(ordinal / 4096);
    const offset = ordinal - page * 4096;
    let bits = pages.get(page);
    if (!bits) {
      bits = new Uint32Array(128);
      pages.set(page, bits);
    }
    const mask = 1 << (offset & 31);
    if (bits[offset >>> 5] & mask) return false;
    bits[offset >>> 5] |= mask;
    return true;
  }

  /** The instruments first seen since the last call. */
  takeUnchecked(): { id: string; firstRow: number }[] {
    const out = this.unchecked;
    this.unchecked = [];
    return out;
  }
}

/** The 400 for one bad field of one row, which leaves the whole upload unstored. */
function rowError(index: unknown, field: string, message: string): AppError {
  return new AppError('invalid_request', `row ${index}: ${message}; nothing was stored`, { [`rows[${index}].${field}`]: [message] });
}

/** Answers 400 naming the first staged row a check query returns (`row_index`), if any. */
export async function rejectFirstRow(check: PromiseLike<readonly Record<string, unknown>[]>, field: string, message: string): Promise<void> {
  const [row] = await check;
  if (row && row.row_index !== null && row.row_index !== undefined) throw rowError(row.row_index, field, message);
}

/** 400 naming the first staged row whose instrument_id is not a known instrument. */
export async function rejectUnknownInstruments(tx: Sql): Promise<void> {
  await rejectFirstRow(
    tx`
      select s.row_index
      from ingest_staging s
      where not exists (select 1 from instruments i where i.id = s.instrument_id)
      order by s.row_index
      limit 1
    `,
    'instrumentId',
    'unknown instrument',
  );
}

/** For a keyed upload: looks up the instruments first seen since the last call; 400 naming the first row of an unknown one. */
async function rejectNewUnknownInstruments(tx: Sql, keys: RowKeys): Promise<void> {
  const unchecked = keys.takeUnchecked();
  if (!unchecked.length) return;
  const unknown = new Set(
    (await tx<{ id: string }[]>`select t.id::text as id from unnest(${unchecked.map((u) => u.id)}::uuid[]) as t (id) where not exists (select 1 from instruments i where i.id = t.id)`).map((r) => r.id),
  );
  const firstUnknown = unchecked.find((u) => unknown.has(u.id)); // in first-row order already
  if (firstUnknown) throw rowError(firstUnknown.firstRow, 'instrumentId', 'unknown instrument');
}

// Shared row-field schemas. Rows from CSV arrive as text, rows from JSON as
// numbers; both are accepted, and NaN, Infinity and empty text are refused.
const NUMERIC_TEXT = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/** FiniteNumber's test, for hand-written hot paths: the number, or undefined. */
export function finiteNumber(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && NUMERIC_TEXT.test(v) ? Number(v) : undefined;
  return n !== undefined && Number.isFinite(n) ? n : undefined;
}

// One transform rather than a union of number and numeric text: a union pays
// for a failed branch on every CSV field.
export const FiniteNumber = z.unknown().transform((v, ctx): number => {
  const n = finiteNumber(v);
  if (n !== undefined) return n;
  const numeric = typeof v === 'number' || (typeof v === 'string' && NUMERIC_TEXT.test(v));
  // "1e999" is numeric text but no finite number.
  ctx.addIssue({ code: 'custom', message: v === undefined ? 'required' : numeric ? 'must be a finite number' : 'must be a number' });
  return z.NEVER;
});

export const PositiveNumber = FiniteNumber.refine((n) => n > 0, 'must be greater than 0');
export const NonNegativeNumber = FiniteNumber.refine((n) => n >= 0, 'must be 0 or greater');

export const BooleanValue = z.union([z.boolean(), z.enum(['true', 'false']).transform((s) => s === 'true')]);
