import { Readable } from 'node:stream';
import { createInterface } from 'node:readline';
import type { Request } from 'express';
import { z } from 'zod';
import type { Sql } from '../db/sql.ts';
import { AppError } from '../http/errors.ts';
import { parseCsvRecords } from './csv.ts';

/**
 * Batch ingest shared by every admin upload route and the CLI.
 *
 * The body is parsed by Content-Type (JSON array, NDJSON or CSV) and streamed:
 * each row is validated and copied into a temporary staging table inside one
 * transaction. Only when every row has passed does the kind's `apply` upsert
 * the staged rows into the real tables, so one bad row aborts the transaction
 * and nothing is stored. Memory stays bounded by the COPY buffer, not by the
 * size of the batch.
 */
export interface IngestKind<Row> {
  /** Used in messages: "daily bars". */
  label: string;
  rowSchema: z.ZodType<Row>;
  /** `create temp table ingest_staging (...)` column list, after `row_index integer`. */
  stagingColumns: string;
  /** Values in staging column order; null for an absent value. */
  toStagingValues(row: Row): (string | number | boolean | null)[];
  /** Checks the staged batch against the database, then upserts. Throw AppError with the row index on a bad row. */
  apply(tx: Sql): Promise<IngestResult>;
  /** Runs after the transaction commits (e.g. refreshing continuous aggregates, which refuse to run inside one). */
  afterCommit?(sql: Sql, result: IngestResult): Promise<void>;
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

async function* jsonRows(body: Readable): AsyncGenerator<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_JSON_BYTES) throw new AppError('payload_too_large', `JSON bodies are limited to ${MAX_JSON_BYTES / 1024 / 1024} MiB; send NDJSON or CSV for larger batches`);
    chunks.push(chunk);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new AppError('invalid_request', 'request body is not valid JSON', { body: ['malformed JSON'] });
  }
  if (!Array.isArray(parsed)) throw new AppError('invalid_request', 'the body must be a JSON array of rows', { body: ['expected an array'] });
  yield* parsed;
}

async function* ndjsonRows(body: Readable): AsyncGenerator<unknown> {
  let index = 0;
  for await (const line of createInterface({ input: body, crlfDelay: Infinity })) {
    if (line.trim() === '') continue;
    try {
      yield JSON.parse(line);
    } catch {
      throw new AppError('invalid_request', `row ${index} is not valid JSON`, { [`rows[${index}]`]: ['malformed JSON line'] });
    }
    index++;
  }
}

export function rowsOf(body: Readable, format: BodyFormat): AsyncGenerator<unknown> {
  return format === 'json' ? jsonRows(body) : format === 'ndjson' ? ndjsonRows(body) : parseCsvRecords(body);
}

function copyField(v: string | number | boolean | null): string {
  if (v === null) return '\\N';
  if (typeof v !== 'string') return String(v);
  return v.replace(/[\\\t\n\r]/g, (c) => (c === '\\' ? '\\\\' : c === '\t' ? '\\t' : c === '\n' ? '\\n' : '\\r'));
}

const COPY_CHUNK_BYTES = 256 * 1024;

export async function ingestRows<Row>(sql: Sql, kind: IngestKind<Row>, rows: AsyncIterable<unknown> | Iterable<unknown>): Promise<IngestResult> {
  const result = await sql.begin(async (tx) => {
    // The COPY lasts as long as the upload; the service-wide statement timeout
    // is for queries, not for streaming a large batch.
    await tx`set local statement_timeout = 0`;
    await tx.unsafe(`create temp table ingest_staging (row_index integer not null, ${kind.stagingColumns}) on commit drop`);
    const writable = await tx`copy ingest_staging from stdin`.writable();
    // A refused batch destroys the stream; the transaction reports the failure.
    writable.on('error', () => {});
    let buffer = '';
    let index = 0;
    const flush = async () => {
      if (!writable.write(buffer)) await new Promise((r) => writable.once('drain', r));
      buffer = '';
    };
    try {
      for await (const raw of rows) {
        const parsed = kind.rowSchema.safeParse(raw);
        if (!parsed.success) {
          const details: Record<string, string[]> = {};
          for (const issue of parsed.error.issues) {
            const key = [`rows[${index}]`, ...issue.path.map(String)].join('.');
            (details[key] ??= []).push(issue.message);
          }
          throw new AppError('invalid_request', `row ${index} of the ${kind.label} batch is invalid; nothing was stored`, details);
        }
        buffer += `${index}\t${kind.toStagingValues(parsed.data).map(copyField).join('\t')}\n`;
        index++;
        if (buffer.length >= COPY_CHUNK_BYTES) await flush();
      }
      if (index === 0) throw new AppError('invalid_request', `the ${kind.label} batch is empty`, { body: ['no rows'] });
      if (buffer) await flush();
    } catch (err) {
      writable.destroy(err as Error);
      throw err;
    }
    await new Promise<void>((resolve, reject) => {
      writable.once('error', reject);
      writable.end(resolve);
    });
    await tx`analyze ingest_staging`;
    return kind.apply(tx as unknown as Sql);
  });
  await kind.afterCommit?.(sql, result);
  return result;
}

export async function ingestRequest<Row>(sql: Sql, kind: IngestKind<Row>, req: Request): Promise<IngestResult> {
  return ingestRows(sql, kind, rowsOf(req, formatOf(req.get('content-type'))));
}

/** Answers 400 naming the first staged row a check query returns (`row_index`), if any. */
export async function rejectFirstRow(check: PromiseLike<readonly Record<string, unknown>[]>, field: string, message: string): Promise<void> {
  const [row] = await check;
  if (row && row.row_index !== null && row.row_index !== undefined) {
    throw new AppError('invalid_request', `row ${row.row_index}: ${message}; nothing was stored`, {
      [`rows[${row.row_index}].${field}`]: [message],
    });
  }
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

// Shared row-field schemas. Rows from CSV arrive as text, rows from JSON as
// numbers; both are accepted, and NaN, Infinity and empty text are refused.
const NUMERIC_TEXT = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

export const FiniteNumber = z.union([
  z.number().refine(Number.isFinite, 'must be a finite number'),
  z.string().regex(NUMERIC_TEXT, 'must be a number').transform(Number),
]);

export const PositiveNumber = FiniteNumber.refine((n) => n > 0, 'must be greater than 0');
export const NonNegativeNumber = FiniteNumber.refine((n) => n >= 0, 'must be 0 or greater');

export const BooleanValue = z.union([z.boolean(), z.enum(['true', 'false']).transform((s) => s === 'true')]);
