import type { Database } from '../db/database.ts';
import type { ISql, Sql } from '../db/sql.ts';
import { ingestedRows } from '../observability/metrics.ts';
import { batchesFrom, type BodyFormat } from './body.ts';
import type { CopyBatch, IngestKind, IngestResult, KeyedIngestKind, OrdinalRange, StagedIngestKind, UploadResult, UploadStamp, WriteCounts } from './kind.ts';
import type { InstrumentMarket } from '../core/session-close.ts';
import * as repo from './repository.ts';
import { AppError } from '../core/errors.ts';
import { encodeRow, KnowledgeChecks, lookUpNewInstruments, parseRow, RowKeys, rowError, type PendingRow } from './row-checks.ts';
import { entryOf } from '../core/map-entry.ts';

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

// A batch is written once its COPY text reaches its size: the first 1 MiB,
// each next twice the one before, up to 16 MiB. Between two batches the
// database waits for the next one's statements (its new instruments, their
// heads) and the text to arrive, about 20 ms, so fewer, larger batches leave
// it idle less; the first is small so that the COPY starts soon and the
// parsing never runs far ahead of it. A 1,000,000-bar upload (130 MB of CSV)
// takes 13 batches instead of 36 at a fixed 4 MiB, and two batches in memory
// stay under 40 MB.
const FIRST_BATCH_BYTES = 1024 * 1024;
const MAX_BATCH_BYTES = 16 * 1024 * 1024;

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
    knowledge?.judge(pending, (row) => entryOf(markets, key.instrumentId(row)));
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
    ...(changed && kind.changes ? { changes: kind.changes(keys.instrumentIds(), keys.spans()) } : {}),
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
 * text to `sink` in batches (FIRST_BATCH_BYTES growing to MAX_BATCH_BYTES). Returns the number of
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
      if (copy.bytes >= copy.batchBytes) await copy.flush();
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

  /** The size at which the batch being built is written. */
  batchBytes = FIRST_BATCH_BYTES;

  /** Joins this batch's text while the previous batch is written, waits for that write, then starts this one's. */
  async flush(): Promise<void> {
    this.lines.push('');
    const text = this.lines.join('\n');
    const rows = this.lines.length - 1;
    this.lines = [];
    this.bytes = 0;
    this.batchBytes = Math.min(MAX_BATCH_BYTES, this.batchBytes * 2);
    await this.writing;
    this.writing = this.write(text, rows);
    this.writing.catch(() => {}); // observed by the next flush, finished() or abandoned()
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
