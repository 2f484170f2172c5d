import type { z } from 'zod';
import type { Database } from '../db/database.ts';
import type { ISql, Sql } from '../db/sql.ts';
import { ingestedRows } from '../metrics.ts';
import { batchesFrom, type BodyFormat } from './body.ts';
import { copyLine } from './copy-text.ts';
import type {
  CopyBatch,
  IngestKind,
  IngestResult,
  KeyedIngestKind,
  KnowledgeRule,
  OrdinalRange,
  StagedIngestKind,
  UploadResult,
  UploadStamp,
  WriteCounts,
} from './kind.ts';
import type { InstrumentMarket } from '../core/session-close.ts';
import * as repo from './repository.ts';
import { AppError } from '../core/errors.ts';
import { hasNestedValue, mayHoldUnstorableText, refusalDetails, unstorableText } from '../core/validate.ts';

/**
 * Ingests an upload body (a request's, a file's) of the given format in one
 * transaction on a connection of `db`. Once `signal` aborts (the request's
 * client has gone), the upload stops at its next body chunk or batch, or
 * before it commits, throwing the signal's reason, and nothing is stored.
 */
export function ingestBody<Row>(
  db: Database,
  kind: IngestKind<Row>,
  body: AsyncIterable<Buffer | string>,
  format: BodyFormat,
  signal?: AbortSignal,
): Promise<UploadResult> {
  return db.run((sql) => ingestUpload(sql, kind, batchesFrom(signal ? untilAborted(body, signal) : body, format), signal));
}

/**
 * The body's chunks until `signal` aborts. Checked per chunk (64 KiB from a
 * socket, 16 KiB inflated), so a body that makes no rows, which no batch
 * check would see, stops too.
 */
async function* untilAborted<T>(body: AsyncIterable<T>, signal: AbortSignal): AsyncGenerator<T> {
  for await (const chunk of body) {
    signal.throwIfAborted();
    yield chunk;
  }
}

// A batch is written once its COPY text reaches this size: large enough that
// the per-statement cost is noise, small enough that two batches in memory
// stay a few MB.
const COPY_BATCH_BYTES = 4 * 1024 * 1024;

/** The 400 for a row its schema refuses, each field worded as a request's are (core/validation-messages.ts). */
function invalidRow(kind: { label: string; rowSchema: z.ZodType }, index: number, raw: unknown) {
  const details = refusalDetails(kind.rowSchema, raw, 'row', `rows[${index}]`) ?? {};
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

/** Batches of raw rows, as a body reader or a loader yields them. */
type RawBatches = AsyncIterable<readonly unknown[]> | Iterable<readonly unknown[]>;

/** Ingests batches of raw rows in one transaction; see IngestKind. The counts only, for loaders that derive nothing afterwards. */
export async function ingestRows<Row>(sql: Sql, kind: IngestKind<Row>, batches: RawBatches): Promise<IngestResult> {
  const { changes: _changes, ...result } = await ingestUpload(sql, kind, batches);
  return result;
}

/**
 * One upload in one transaction, the way its kind writes; the rows are
 * counted once it has committed. An aborted `signal` stops it between
 * batches and keeps it from committing.
 */
async function ingestUpload<Row>(sql: Sql, kind: IngestKind<Row>, batches: RawBatches, signal?: AbortSignal): Promise<UploadResult> {
  const upload: UploadStamp = { startedAt: new Date().toISOString() };
  if (kind.writes === 'staged') {
    const result = await sql.begin(async (tx) => {
      const applied = await stageAndApply(tx, kind, batches, upload, signal);
      signal?.throwIfAborted();
      return applied;
    });
    countIngested(kind, result);
    return result;
  }
  const { result, range } = await sql.begin(async (tx) => {
    const written = await writeKeyed(tx, kind, batches, upload, signal);
    signal?.throwIfAborted();
    return written;
  });
  countIngested(kind, result);
  await kind.afterCommit?.(sql, range);
  return result;
}

/** Counted once the transaction has committed: an upload refused anywhere stored nothing. */
function countIngested(kind: { label: string }, result: IngestResult): void {
  for (const outcome of ['inserted', 'updated', 'unchanged'] as const) {
    ingestedRows.inc({ kind: kind.label, outcome }, result[outcome]);
  }
}

/** A staged upload: every row copied into ingest_staging after its index, then checked and applied by the kind. */
async function stageAndApply<Row>(
  tx: ISql,
  kind: StagedIngestKind<Row>,
  batches: RawBatches,
  upload: UploadStamp,
  signal: AbortSignal | undefined,
): Promise<UploadResult> {
  await repo.beginUpload(tx, kind.stagingColumns, true);
  await encodeRows(kind, batches, upload, signal, {
    line: (line, index) => `${index}\t${line}`,
    write: (text) => repo.copyInto(tx, 'ingest_staging', text),
  });
  await repo.analyzeStaging(tx);
  signal?.throwIfAborted();
  return kind.apply(tx);
}

/**
 * A keyed upload: each row's key is checked as it streams (a repeat is
 * refused at the row that repeats it), and each batch is written by the
 * kind's writer once its new instruments are known to exist.
 */
async function writeKeyed<Row>(
  tx: ISql,
  kind: KeyedIngestKind<Row>,
  batches: RawBatches,
  upload: UploadStamp,
  signal: AbortSignal | undefined,
): Promise<{ result: UploadResult; range: OrdinalRange }> {
  await repo.beginUpload(tx, kind.stagingColumns, false);
  const { key } = kind;
  const keys = new RowKeys();
  const writer = kind.startUpload();
  const counts: WriteCounts = { inserted: 0, updated: 0 };
  // Time ordinals of the whole upload, and the keys of the batch being built.
  const range: OrdinalRange = { first: Infinity, last: -Infinity };
  let building = new BatchKeys();
  const markets = new Map<string, InstrumentMarket>();
  const knowledge = kind.knowledge ? new KnowledgeChecks(kind.knowledge, upload) : undefined;
  const writeBatch = async (batch: CopyBatch, pending: PendingRow[]) => {
    await lookUpNewInstruments(tx, keys, markets);
    knowledge?.judge(pending, (row) => markets.get(key.instrumentId(row))!);
    const written = await writer.writeBatch(tx, batch);
    counts.inserted += written.inserted;
    counts.updated += written.updated;
  };
  const rows = await encodeRows(kind, batches, upload, signal, {
    check(row, index) {
      const ordinal = key.ordinal(row);
      const instrumentId = key.instrumentId(row);
      if (!keys.add(instrumentId, ordinal, index)) throw rowError(index, key.field, 'duplicates an earlier row of this batch');
      building.add(instrumentId, ordinal);
      knowledge?.check(row, index, building.pending);
    },
    line: (line) => line,
    write(text, batchRows) {
      const batch: CopyBatch = { text, rows: batchRows, first: building.first, last: building.last, firstByInstrument: building.firstByInstrument };
      const { pending } = building;
      building = new BatchKeys();
      range.first = Math.min(range.first, batch.first);
      range.last = Math.max(range.last, batch.last);
      return writeBatch(batch, pending);
    },
  });
  const changed = counts.inserted + counts.updated > 0;
  const result: UploadResult = {
    rows,
    ...counts,
    unchanged: rows - counts.inserted - counts.updated,
    ...writer.summarise?.(range),
    ...(changed && kind.changes ? { changes: kind.changes(keys.instrumentIds()) } : {}),
  };
  return { result, range };
}

/** The time ordinals of the batch being built, overall and per instrument, and its rows that wait for their instrument's market. */
class BatchKeys implements OrdinalRange {
  first = Infinity;
  last = -Infinity;
  /** Each instrument of the batch with its first time ordinal in it. */
  readonly firstByInstrument = new Map<string, number>();
  readonly pending: PendingRow[] = [];

  add(instrumentId: string, ordinal: number): void {
    if (ordinal < this.first) this.first = ordinal;
    if (ordinal > this.last) this.last = ordinal;
    const first = this.firstByInstrument.get(instrumentId);
    if (first === undefined || ordinal < first) this.firstByInstrument.set(instrumentId, ordinal);
  }
}

/** How one way of writing takes the encoded rows. */
interface RowSink<Row> {
  /** Checks a parsed row before it is encoded; throws the 400 for a bad one. */
  check?(row: Row, index: number): void;
  /** The COPY line sent for the row whose encoded values are `line`. */
  line(line: string, index: number): string;
  /** Starts writing a batch of COPY text holding `rows` lines. */
  write(text: string, rows: number): Promise<void>;
}

/**
 * Parses and encodes every row of the upload, in order, and hands the COPY
 * text to `sink` in batches of about COPY_BATCH_BYTES. Returns the number of
 * rows; an upload without any is refused. An aborted `signal` stops it at the
 * next batch, once the write in flight has ended.
 */
async function encodeRows<Row>(
  kind: IngestKind<Row>,
  batches: RawBatches,
  upload: UploadStamp,
  signal: AbortSignal | undefined,
  sink: RowSink<Row>,
): Promise<number> {
  const copy = new OverlappedWrites(sink.write);
  let index = 0;
  try {
    for await (const batch of batches) {
      for (const raw of batch) {
        const row = parseRow(kind, raw, index);
        sink.check?.(row, index);
        const line = encodeRow(kind, row, raw, index, upload);
        copy.add(sink.line(line, index), line.length + 1);
        index++;
      }
      if (copy.bytes >= COPY_BATCH_BYTES) await copy.flush();
      // A body that arrives faster than it is parsed is read on microtasks alone, and the database's replies to the
      // write in flight wait for the parsing to stop: one turn of the event loop per body chunk lets them in.
      await new Promise<void>((resolve) => setImmediate(resolve));
      // That turn is also when a client's leaving is seen: a body already received is otherwise parsed to its end.
      signal?.throwIfAborted();
    }
    if (index === 0) throw new AppError('invalid_request', `the ${kind.label} batch is empty`, { body: ['no rows'] });
    if (copy.pending) await copy.flush();
    await copy.finished();
  } catch (err) {
    await copy.abandoned();
    throw err;
  }
  return index;
}

/**
 * COPY lines gathered into batches, each batch written while the next is
 * parsed: one write runs at a time, and memory holds the batch being written
 * and the one being built.
 */
class OverlappedWrites {
  private lines: string[] = [];
  /** The size of the batch being built, counted as its rows' encoded values. */
  bytes = 0;
  /** The previous batch's write, running while the next batch is parsed. */
  private writing: Promise<void> = Promise.resolve();
  private readonly write: (text: string, rows: number) => Promise<void>;

  constructor(write: (text: string, rows: number) => Promise<void>) {
    this.write = write;
  }

  add(line: string, bytes: number): void {
    this.lines.push(line);
    this.bytes += bytes;
  }

  /** Whether the batch being built holds any row. */
  get pending(): boolean {
    return this.lines.length > 0;
  }

  /** Waits for the previous batch's write, then starts this one's. */
  async flush(): Promise<void> {
    await this.writing;
    this.lines.push('');
    this.writing = this.write(this.lines.join('\n'), this.lines.length - 1);
    this.writing.catch(() => {}); // observed by the next flush, finished() or abandoned()
    this.lines = [];
    this.bytes = 0;
  }

  /** The last write. */
  finished(): Promise<void> {
    return this.writing;
  }

  /** After a failure: the write in flight, whatever its outcome, so no statement is left running when the transaction ends. */
  abandoned(): Promise<void> {
    return this.writing.catch(() => {});
  }
}

/** The row as its kind's hot path or its schema returns it; the 400 naming each bad field otherwise. */
function parseRow<Row>(kind: IngestKind<Row>, raw: unknown, index: number): Row {
  const fast = kind.fastRow?.(raw);
  if (fast !== undefined) return fast;
  const parsed = kind.rowSchema.safeParse(raw);
  if (!parsed.success) throw invalidRow(kind, index, raw);
  return parsed.data;
}

/**
 * The row's values as a line of COPY text. Text PostgreSQL cannot store is
 * refused by field, on the parsed row, so a NUL in a CSV cell's JSON text
 * (brokerCodes, symbols, params) is seen too. A row with nested values is
 * scanned before they are serialised (JSON.stringify overflows on 10,000
 * levels). For the rest, every text column is in the COPY line, and one test
 * of it stands in for the scan: on the daily-bar CSV path 0.3 s per million
 * rows against 3.0 s for the scan (7.2 s without either).
 */
function encodeRow<Row>(kind: IngestKind<Row>, row: Row, raw: unknown, index: number, upload: UploadStamp): string {
  if (hasNestedValue(row as object)) refuseUnstorable(kind, index, row);
  const line = kind.copyLine ? kind.copyLine(row, raw as Record<string, unknown>, upload) : copyLine(kind.toStagingValues(row, upload));
  // The test also flattens a line built by concatenation, so the batch holds one string per row rather than a rope
  // of its pieces: 1,000,000 bars posted in 7.0 s with the test on the line, 7.5 s with it on the free text alone.
  if (mayHoldUnstorableText(line)) refuseUnstorable(kind, index, row);
  return line;
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
export async function rejectUnknownInstruments(tx: ISql): Promise<void> {
  await rejectFirstRow(repo.unknownInstrumentRows(tx), 'instrumentId', 'unknown instrument');
}

/**
 * For a keyed upload: looks up the instruments first seen since the last
 * call, adding their markets to `markets`; 400 naming the first row of an
 * unknown one.
 */
async function lookUpNewInstruments(tx: ISql, keys: RowKeys, markets: Map<string, InstrumentMarket>): Promise<void> {
  const unchecked = keys.takeUnchecked();
  if (!unchecked.length) return;
  const found = await repo.instrumentMarkets(
    tx,
    unchecked.map((u) => u.id),
  );
  const firstUnknown = unchecked.find((u) => !found.has(u.id)); // in first-row order already
  if (firstUnknown) throw rowError(firstUnknown.firstRow, 'instrumentId', 'unknown instrument');
  for (const [id, market] of found) markets.set(id, market);
}

/** A row known before some market's earliest instant for it: its index and knowledge time, judged once its instrument is known. */
interface PendingRow {
  row: unknown;
  index: number;
  knownAt: number;
}

/**
 * A keyed kind's KnowledgeRule applied to one upload: a row known after
 * every market's earliest instant for it (most rows) passes alone; the others
 * wait with their batch and are judged against their instrument's market
 * when it is written. A refusal names the row's asOf, in which the upload
 * states when the row became known (absent: the upload's start).
 */
class KnowledgeChecks<Row> {
  private readonly rule: KnowledgeRule<Row>;
  private readonly startedAt: number;

  constructor(rule: KnowledgeRule<Row>, upload: UploadStamp) {
    this.rule = rule;
    this.startedAt = Date.parse(upload.startedAt);
  }

  check(row: Row, index: number, pending: PendingRow[]): void {
    const knownAt = this.rule.statedKnownAt(row) ?? this.startedAt;
    if (knownAt < this.rule.knownOnAnyMarket(row)) pending.push({ row, index, knownAt });
  }

  judge(pending: PendingRow[], marketOf: (row: Row) => InstrumentMarket): void {
    for (const p of pending) {
      const row = p.row as Row;
      const earliest = this.rule.earliest(row, marketOf(row));
      if (p.knownAt >= earliest.at) continue;
      const known = new Date(p.knownAt).toISOString();
      const stated = this.rule.statedKnownAt(row) === undefined ? `absent, so known from the upload's start, ${known}, which` : known;
      throw rowError(
        p.index,
        'asOf',
        `${stated} is before ${new Date(earliest.at).toISOString()}, ${earliest.rule}: no ${this.rule.noun} is known before then`,
      );
    }
  }
}
