import type { z } from 'zod';
import type { Database } from '../db/database.ts';
import type { Sql } from '../db/sql.ts';
import { ingestedRows } from '../metrics.ts';
import { batchesFrom, type BodyFormat } from './body.ts';
import { copyLine } from './copy-text.ts';
import type { CopyBatch, IngestKind, IngestResult, OrdinalRange, UploadResult, WriteCounts } from './kind.ts';
import * as repo from './repository.ts';
import { AppError } from '../core/errors.ts';
import { hasNestedValue, mayHoldUnstorableText, unstorableText } from '../core/validate.ts';

/**
 * Ingests an upload body (a request's, a file's) of the given format in one
 * transaction on a connection of `db`.
 */
export function ingestBody<Row>(db: Database, kind: IngestKind<Row>, body: AsyncIterable<Buffer | string>, format: BodyFormat): Promise<UploadResult> {
  return db.run((sql) => ingestUpload(sql, kind, batchesFrom(body, format)));
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
  const details = Object.fromEntries(
    Object.entries(problems).map(([path, messages]) => [path === '_' ? `rows[${index}]` : `rows[${index}].${path}`, messages]),
  );
  throw new AppError('invalid_request', `row ${index} of the ${kind.label} batch holds text PostgreSQL cannot store; nothing was stored`, details);
}

/** Ingests batches of raw rows in one transaction; see IngestKind. The counts only, for loaders that derive nothing afterwards. */
export async function ingestRows<Row>(
  sql: Sql,
  kind: IngestKind<Row>,
  batches: AsyncIterable<readonly unknown[]> | Iterable<readonly unknown[]>,
): Promise<IngestResult> {
  const { changes: _changes, ...result } = await ingestUpload(sql, kind, batches);
  return result;
}

async function ingestUpload<Row>(
  sql: Sql,
  kind: IngestKind<Row>,
  batches: AsyncIterable<readonly unknown[]> | Iterable<readonly unknown[]>,
): Promise<UploadResult> {
  const key = kind.key;
  if (key ? !kind.writeBatch : !kind.apply) throw new Error(`ingest kind ${kind.label}: keyed kinds need writeBatch, others apply`);
  // Time ordinals of the whole upload (keyed kinds).
  const uploadRange: OrdinalRange = { first: Infinity, last: -Infinity };
  const result = await sql.begin(async (tx) => {
    await repo.beginUpload(tx as unknown as Sql, kind.stagingColumns, !key);
    const keys = key ? new RowKeys() : null;
    const counts: WriteCounts = { inserted: 0, updated: 0 };
    const state: Record<string, unknown> = {};
    let index = 0;
    // The batch's COPY lines, joined when it is written.
    let lines: string[] = [];
    let bytes = 0;
    // Time ordinals of the batch being built (keyed kinds).
    let batchRange: OrdinalRange = { first: Infinity, last: -Infinity };
    let firstByInstrument = new Map<string, number>();
    // The previous batch's write, running while the next batch is parsed.
    let writing: Promise<void> = Promise.resolve();

    const write = async (batch: CopyBatch) => {
      if (!keys) return repo.copyInto(tx as unknown as Sql, 'ingest_staging', batch.text);
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
      writing = write({ text: lines.join('\n'), rows: lines.length - 1, ...batchRange, firstByInstrument });
      writing.catch(() => {}); // observed by the next flush or the final await
      lines = [];
      bytes = 0;
      batchRange = { first: Infinity, last: -Infinity };
      firstByInstrument = new Map();
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
            const instrumentId = key!.instrumentId(row);
            if (!keys.add(instrumentId, ordinal, index)) {
              throw rowError(index, key!.field, 'duplicates an earlier row of this batch');
            }
            if (ordinal < batchRange.first) batchRange.first = ordinal;
            if (ordinal > batchRange.last) batchRange.last = ordinal;
            const first = firstByInstrument.get(instrumentId);
            if (first === undefined || ordinal < first) firstByInstrument.set(instrumentId, ordinal);
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
    if (keys) {
      const changed = counts.inserted + counts.updated > 0;
      return {
        rows: index,
        ...counts,
        unchanged: index - counts.inserted - counts.updated,
        ...kind.summarise?.(uploadRange, state),
        ...(changed && kind.changes ? { changes: kind.changes(keys.instrumentIds()) } : {}),
      };
    }
    await repo.analyzeStaging(tx as unknown as Sql);
    return kind.apply!(tx as unknown as Sql);
  });
  // Counted once the transaction has committed: an upload refused anywhere stored nothing.
  for (const outcome of ['inserted', 'updated', 'unchanged'] as const) {
    ingestedRows.inc({ kind: kind.label, outcome }, result[outcome]);
  }
  await kind.afterCommit?.(sql, uploadRange);
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

  /** Every instrument of the upload. */
  instrumentIds(): string[] {
    return [...this.pages.keys()];
  }

  /** The instruments first seen since the last call. */
  takeUnchecked(): { id: string; firstRow: number }[] {
    const out = this.unchecked;
    this.unchecked = [];
    return out;
  }
}

/** The 400 for one bad field of one row, which leaves the whole upload unstored. */
function rowError(index: number, field: string, message: string): AppError {
  return new AppError('invalid_request', `row ${index}: ${message}; nothing was stored`, { [`rows[${index}].${field}`]: [message] });
}

/** Answers 400 naming the first staged row a check query returns (`row_index`), if any. */
export async function rejectFirstRow(check: PromiseLike<readonly { row_index: number }[]>, field: string, message: string): Promise<void> {
  const [row] = await check;
  if (row) throw rowError(row.row_index, field, message);
}

/** 400 naming the first staged row whose instrument_id is not a known instrument. */
export async function rejectUnknownInstruments(tx: Sql): Promise<void> {
  await rejectFirstRow(repo.unknownInstrumentRows(tx), 'instrumentId', 'unknown instrument');
}

/** For a keyed upload: looks up the instruments first seen since the last call; 400 naming the first row of an unknown one. */
async function rejectNewUnknownInstruments(tx: Sql, keys: RowKeys): Promise<void> {
  const unchecked = keys.takeUnchecked();
  if (!unchecked.length) return;
  const unknown = await repo.unknownInstrumentIds(
    tx,
    unchecked.map((u) => u.id),
  );
  const firstUnknown = unchecked.find((u) => unknown.has(u.id)); // in first-row order already
  if (firstUnknown) throw rowError(firstUnknown.firstRow, 'instrumentId', 'unknown instrument');
}
