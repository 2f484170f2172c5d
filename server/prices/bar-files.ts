import {
  Bool,
  DateDay,
  Dictionary,
  Field,
  Float64,
  Int32,
  makeData,
  RecordBatch,
  Schema,
  Struct,
  Table,
  tableToIPC,
  TimestampMillisecond,
  Utf8,
  vectorFromArray,
  type Data,
  type DataType,
} from 'apache-arrow';
import { ByteWriter, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import { zstdCompressSync, constants as zlib } from 'node:zlib';
import type { z } from 'zod';
import type { TextFormat } from '../core/params.ts';
import type { Meta } from '../core/meta.ts';
import { csvFraming } from '../http/envelope.ts';
import { FORMAT_TYPES } from '../http/format.ts';
import { DAILY_BAR, INTRADAY_BAR, type BarField } from './bar-text-sql.ts';
import { DailyBarSchema, IntradayBarSchema } from './schema.ts';
import type { DailyBarsFormat } from './daily-text-repository.ts';

// Price bars as files: CSV rows as PostgreSQL wrote them, or columns in an
// Apache Arrow IPC stream or a Parquet file. A daily series comes packed by
// PostgreSQL as the bytes of its columns (daily-text-repository.ts,
// packedBars), an intraday one as the JSON answer's text, parsed here
// (JSON.parse reads the shortest round-trip decimal as the double it came
// from); both carry the values the JSON answer writes, so a columnar file and
// a JSON read of the same asOf and version hold the same numbers.
//
// Columns: instrumentId, then the bar's fields with their JSON names, in the
// JSON's order; dates as Arrow date32 / Parquet DATE, instants as UTC
// timestamps in milliseconds, prices and volume as float64, booleans as
// booleans, strings dictionary-encoded; a field the API document marks
// nullable is nullable, and an absent value is null. The answer's meta, as
// JSON text, is the value of the key `meta` in the Arrow schema's or the
// Parquet file's key-value metadata.

export type BarFileFormat = 'csv' | 'arrow' | 'parquet';
export type BarKind = 'daily' | 'intraday';

/** The columnar files' media types (the price reads' own, http/format.ts). */
export const MEDIA_TYPES = { arrow: FORMAT_TYPES.arrow, parquet: FORMAT_TYPES.parquet } as const;

export interface BarFile<Input extends DailyBarsFormat = DailyBarsFormat> {
  /** The form add() takes the bars in: packed columns for daily columnar files, JSON text for intraday ones, CSV rows for CSV. */
  readonly textFormat: Input;
  /** One instrument's bars in date (time) order, as the price reads' text parts in textFormat. */
  add(instrumentId: string, parts: Buffer[]): Promise<void>;
  /**
   * Writes what remains (Parquet's footer carries the meta) and returns the
   * bytes that go before everything written: Arrow's schema message, which
   * carries the meta, so a streamed Arrow answer is held until its meta is
   * known (bar-spool.ts); the CSV header; empty for Parquet.
   */
  end(meta: Meta): Promise<Buffer>;
}

/**
 * Rows a columnar batch (Arrow record batch, Parquet row group) holds: a
 * fixed count, so the same bars always make the same file. Writing a batch
 * holds the request thread: on 1.3 million daily bars a Parquet row group of
 * 32,768 took it about 50 ms (92 at most), one of 65,536 about 110 (164 at
 * most), for the same bytes within 0.5 %; an Arrow batch takes 8 to 15 ms.
 */
export const BATCH_ROWS = 32_768;

interface Column {
  name: string;
  kind: BarField[1];
  nullable: boolean;
}

const ID_FIELD: BarField = ['instrumentId', 'id', 'instrument_id'];

function columnsOf(fields: BarField[], schema: z.ZodObject): Column[] {
  return [ID_FIELD, ...fields].map(([name, kind]) => ({ name, kind, nullable: schema.shape[name]?.safeParse(null).success ?? false }));
}

export const BAR_COLUMNS: Record<BarKind, Column[]> = {
  daily: columnsOf(DAILY_BAR, DailyBarSchema),
  intraday: columnsOf(INTRADAY_BAR, IntradayBarSchema),
};

const DAY_MS = 86_400_000;

/**
 * A column's values for some bars: numbers as float64 (NaN where absent),
 * dates as days since 1970-01-01, instants as milliseconds since 1970,
 * booleans as bytes (1 or 0), strings one per bar or, as a one-element
 * array, one for every bar.
 */
type Values = Float64Array | Int32Array | BigInt64Array | Uint8Array | string[];

/** Some bars of one instrument as columns, in the order of BAR_COLUMNS. */
interface Piece {
  rows: number;
  columns: Values[];
}

/** The bytes of one packed bar (daily-text-repository.ts, packedBars): day, five doubles, asOf, stale. */
const PACKED_BAR_BYTES = 4 + 5 * 8 + 8 + 1;

/** A daily series packed by PostgreSQL (daily-text-repository.ts, packedBars) as a Piece, in date order. */
function unpackDaily(instrumentId: string, packed: Buffer): Piece {
  const n = packed.readInt32BE(0);
  const days = new Int32Array(n);
  for (let i = 0, at = 4; i < n; i++, at += PACKED_BAR_BYTES) days[i] = packed.readInt32BE(at);
  // The records come in no set order: usually the index's, by date.
  let sorted = true;
  for (let i = 1; i < n && sorted; i++) sorted = days[i - 1] < days[i];
  const order = sorted ? null : Array.from(days.keys()).sort((a, b) => days[a] - days[b]);
  const record = (i: number) => 4 + (order ? order[i] : i) * PACKED_BAR_BYTES;
  const numbers = Array.from({ length: 5 }, () => new Float64Array(n));
  const asOf = new BigInt64Array(n);
  const stale = new Uint8Array(n);
  const dates = order ? Int32Array.from(order, (k) => days[k]) : days;
  for (let i = 0; i < n; i++) {
    const at = record(i);
    for (let c = 0; c < 5; c++) numbers[c][i] = packed.readDoubleBE(at + 4 + 8 * c);
    asOf[i] = packed.readBigInt64BE(at + 44);
    stale[i] = packed[at + 52];
  }
  const texts = (JSON.parse(packed.toString('utf8', 4 + n * PACKED_BAR_BYTES)) as (string | [number, string])[][]).map((values) => {
    if (values.length === 1 && typeof values[0] === 'string') return values as string[];
    const byDay = new Map((values as [number, string][]).map(([day, value]) => [day, value]));
    return Array.from(dates, (day) => byDay.get(day) as string);
  });
  const [currency, unit, source] = texts;
  // BAR_COLUMNS.daily: instrumentId, barDate, open, high, low, close, volume, quoteCurrency, quoteUnit, stale, asOf, source.
  return { rows: n, columns: [[instrumentId], dates, ...numbers, currency, unit, stale, asOf, source] };
}

/** Bars as the JSON answer's text (bar objects joined by commas) as a Piece. */
function parseJson(columns: Column[], instrumentId: string, parts: Buffer[]): Piece {
  const text = parts.length === 1 ? parts[0].toString('utf8') : Buffer.concat(parts).toString('utf8');
  const bars = text ? (JSON.parse(`[${text}]`) as Record<string, unknown>[]) : [];
  const n = bars.length;
  return {
    rows: n,
    columns: columns.map(({ name, kind }): Values => {
      switch (kind) {
        case 'id':
          return [instrumentId];
        case 'number':
          return Float64Array.from(bars, (bar) => (bar[name] as number | null) ?? NaN);
        case 'date':
          return Int32Array.from(bars, (bar) => Date.parse(bar[name] as string) / DAY_MS);
        case 'instant':
          return BigInt64Array.from(bars, (bar) => BigInt(Date.parse(bar[name] as string)));
        case 'boolean':
          return Uint8Array.from(bars, (bar) => (bar[name] ? 1 : 0));
        default:
          return bars.map((bar) => bar[name] as string);
      }
    }),
  };
}

/** The first `n` rows of a piece, and the rest. */
function split(piece: Piece, n: number): [Piece, Piece] {
  const cut = (values: Values, from: number, to: number): Values =>
    Array.isArray(values) ? (values.length === 1 ? values : values.slice(from, to)) : values.subarray(from, to);
  return [
    { rows: n, columns: piece.columns.map((v) => cut(v, 0, n)) },
    { rows: piece.rows - n, columns: piece.columns.map((v) => cut(v, n, piece.rows)) },
  ];
}

/** Pieces gathered until a batch is full. */
class Gathered {
  rows = 0;
  private pieces: Piece[] = [];

  add(piece: Piece): void {
    if (!piece.rows) return;
    this.pieces.push(piece);
    this.rows += piece.rows;
  }

  /** Pieces holding the first `n` rows, taken out. */
  take(n: number): Piece[] {
    const taken: Piece[] = [];
    let left = n;
    while (left > 0) {
      // eslint-disable-next-line @typescript-eslint/no-non-null-assertion -- take is asked for at most this.rows rows
      const piece = this.pieces.shift()!;
      if (piece.rows <= left) {
        taken.push(piece);
        left -= piece.rows;
      } else {
        const [head, rest] = split(piece, left);
        taken.push(head);
        this.pieces.unshift(rest);
        left = 0;
      }
    }
    this.rows -= n;
    return taken;
  }
}

/** Column `c` of the pieces, joined into one typed array of `Type`. */
function joined<T extends Float64Array | Int32Array | BigInt64Array | Uint8Array>(pieces: Piece[], c: number, Type: new (n: number) => T): T {
  const out = new Type(pieces.reduce((n, p) => n + p.rows, 0));
  let at = 0;
  for (const piece of pieces) {
    out.set(piece.columns[c] as unknown as ArrayLike<number> & ArrayLike<bigint> as never, at);
    at += piece.rows;
  }
  return out;
}

/** Column `c` of the pieces as one string per row. */
function strings(pieces: Piece[], c: number): string[] {
  const out: string[] = [];
  for (const piece of pieces) {
    const values = piece.columns[c] as string[];
    if (values.length === piece.rows) out.push(...values);
    else for (let i = 0; i < piece.rows; i++) out.push(values[0]);
  }
  return out;
}

// ---- Arrow IPC stream ----

const arrowType = ({ kind }: Column, c: number): DataType => {
  switch (kind) {
    case 'number':
      return new Float64();
    case 'date':
      return new DateDay();
    case 'instant':
      return new TimestampMillisecond('UTC');
    case 'boolean':
      return new Bool();
    default:
      // Each dictionary column's id is its position, the same in every batch and in the schema.
      return new Dictionary(new Utf8(), new Int32(), c);
  }
};

function arrowSchema(columns: Column[], meta?: Meta): Schema {
  return new Schema(
    columns.map((column, c) => new Field(column.name, arrowType(column, c), column.nullable)),
    meta ? new Map([['meta', JSON.stringify(meta)]]) : undefined,
  );
}

/** A bitmap of `n` bits, bit i set where `set(i)`, and how many are not. */
function bitmapOf(n: number, set: (i: number) => boolean): { bitmap: Uint8Array; unset: number } {
  const bitmap = new Uint8Array(Math.ceil(n / 8));
  let unset = 0;
  for (let i = 0; i < n; i++) {
    if (set(i)) bitmap[i >> 3] |= 1 << (i & 7);
    else unset++;
  }
  return { bitmap, unset };
}

/** Column `c` of the pieces as Arrow data of `type`: dictionary codes in first-seen order, NaN as null. */
function arrowColumn(type: DataType, pieces: Piece[], c: number): Data {
  const length = pieces.reduce((n, p) => n + p.rows, 0);
  if (type instanceof Dictionary) {
    const codes = new Map<string, number>();
    const indices = new Int32Array(length);
    let at = 0;
    for (const piece of pieces) {
      const values = piece.columns[c] as string[];
      for (let i = 0; i < piece.rows; i++) {
        const v = values.length === piece.rows ? values[i] : values[0];
        let code = codes.get(v);
        if (code === undefined) codes.set(v, (code = codes.size));
        indices[at++] = code;
      }
    }
    return makeData({ type, length, nullCount: 0, data: indices, dictionary: vectorFromArray([...codes.keys()], new Utf8()) });
  }
  if (type instanceof Bool) {
    const flags = joined(pieces, c, Uint8Array);
    return makeData({ type, length, nullCount: 0, data: bitmapOf(length, (i) => flags[i] === 1).bitmap });
  }
  if (type instanceof TimestampMillisecond) return makeData({ type, length, nullCount: 0, data: joined(pieces, c, BigInt64Array) });
  if (type instanceof DateDay) return makeData({ type, length, nullCount: 0, data: joined(pieces, c, Int32Array) });
  const data = joined(pieces, c, Float64Array);
  const { bitmap, unset } = bitmapOf(length, (i) => !Number.isNaN(data[i]));
  return makeData({ type: type as Float64, length, nullCount: unset, nullBitmap: unset ? bitmap : null, data });
}

/** The IPC stream's first message (the schema) and its end-of-stream marker, measured off a whole stream. */
const streamParts = (bytes: Uint8Array) => ({ schemaEnd: 8 + new DataView(bytes.buffer, bytes.byteOffset).getInt32(4, true), eosStart: bytes.length - 8 });

/**
 * One record batch as IPC messages: its dictionaries (each batch replaces
 * the last, which the stream format allows), then the batch. Written by
 * apache-arrow as a stream of its own, less that stream's schema and end.
 */
function arrowBatchMessages(schema: Schema, pieces: Piece[]): Buffer {
  const children = schema.fields.map((field, c) => arrowColumn(field.type, pieces, c));
  const length = pieces.reduce((n, p) => n + p.rows, 0);
  const batch = new RecordBatch(schema, makeData({ type: new Struct(schema.fields), length, nullCount: 0, children }));
  const bytes = tableToIPC(new Table([batch]), 'stream');
  const { schemaEnd, eosStart } = streamParts(bytes);
  return Buffer.from(bytes.buffer, bytes.byteOffset + schemaEnd, eosStart - schemaEnd);
}

/** The stream's head: the schema message, carrying the meta. */
function arrowHead(columns: Column[], meta: Meta): Buffer {
  const bytes = tableToIPC(new Table(arrowSchema(columns, meta)), 'stream');
  const { schemaEnd } = streamParts(bytes);
  return Buffer.from(bytes.buffer, bytes.byteOffset, schemaEnd);
}

/** The end-of-stream marker: a continuation and a zero length. */
const ARROW_EOS = Buffer.from([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

/**
 * How the columnar files take their bars: a daily series packed by
 * PostgreSQL (packedBars), an intraday one as the JSON answer's text (its
 * rollups' text may be stored, sql/026).
 */
export const COLUMNAR_INPUT = { daily: 'packed', intraday: 'json' } as const satisfies Record<BarKind, DailyBarsFormat>;

function pieceOf(kind: BarKind, instrumentId: string, parts: Buffer[]): Piece {
  if (kind === 'intraday') return parseJson(BAR_COLUMNS.intraday, instrumentId, parts);
  return unpackDaily(instrumentId, parts.length === 1 ? parts[0] : Buffer.concat(parts));
}

function arrowFile(kind: BarKind, write: (chunk: Buffer) => Promise<void>): BarFile {
  const columns = BAR_COLUMNS[kind];
  const schema = arrowSchema(columns);
  const gathered = new Gathered();
  return {
    textFormat: COLUMNAR_INPUT[kind],
    async add(instrumentId, parts) {
      gathered.add(pieceOf(kind, instrumentId, parts));
      while (gathered.rows >= BATCH_ROWS) await write(arrowBatchMessages(schema, gathered.take(BATCH_ROWS)));
    },
    async end(meta) {
      if (gathered.rows) await write(arrowBatchMessages(schema, gathered.take(gathered.rows)));
      await write(ARROW_EOS);
      return arrowHead(columns, meta);
    },
  };
}

// ---- Parquet ----

function parquetElement({ name, kind, nullable }: Column): SchemaElement {
  const repetition_type = nullable ? 'OPTIONAL' : 'REQUIRED';
  switch (kind) {
    case 'number':
      return { name, type: 'DOUBLE', repetition_type };
    case 'date':
      return { name, type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' }, repetition_type };
    case 'instant':
      return {
        name,
        type: 'INT64',
        converted_type: 'TIMESTAMP_MILLIS',
        logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
        repetition_type,
      };
    case 'boolean':
      return { name, type: 'BOOLEAN', repetition_type };
    default:
      return { name, type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' }, repetition_type };
  }
}

/** Column `c` of the pieces as hyparquet-writer takes it: typed arrays where it can, null for an absent number. */
type ParquetColumn = Parameters<ParquetWriter['write']>[0]['columnData'][number]['data'];

function parquetValues(kind: Column['kind'], nullable: boolean, pieces: Piece[], c: number): ParquetColumn {
  switch (kind) {
    case 'number': {
      const values = joined(pieces, c, Float64Array);
      // The writer finds absent values by null: an array of them only where one is absent.
      return nullable && values.some(Number.isNaN) ? Array.from(values, (v) => (Number.isNaN(v) ? null : v)) : values;
    }
    case 'date':
      return joined(pieces, c, Int32Array);
    case 'instant':
      return joined(pieces, c, BigInt64Array);
    case 'boolean':
      return Array.from(joined(pieces, c, Uint8Array), (v) => v === 1);
    default: {
      // One UTF-8 encoding per distinct value, shared by its rows: the writer
      // would otherwise encode every row's string (four columns of a batch).
      const encoded = new Map<string, Uint8Array>();
      const utf8 = (v: string) => encoded.get(v) ?? encoded.set(v, Buffer.from(v)).get(v);
      return strings(pieces, c).map(utf8) as Uint8Array[];
    }
  }
}

/**
 * Encodings chosen per kind of column, where the writer's own choice
 * (dictionary when it at least halves a column, else plain) is not the best:
 * dates and instants step by about a day, so delta encoding stores each in a
 * few bits. On a year of 500 instruments' daily bars (126,000 rows) these two
 * columns took 1,115 bytes so, against about 15 KB dictionary-encoded.
 * Byte-stream-split encoding of the prices was measured too, and made the
 * file 58 % larger.
 */
const PARQUET_ENCODINGS: Partial<Record<Column['kind'], { encoding: 'DELTA_BINARY_PACKED' }>> = {
  date: { encoding: 'DELTA_BINARY_PACKED' },
  instant: { encoding: 'DELTA_BINARY_PACKED' },
};

/**
 * The columns whose row groups carry min/max statistics: those a reader
 * filters on (instrumentId, barDate, barTimestamp, asOf), so DuckDB or
 * pyarrow skip the row groups outside a filter. Prices and volume are not
 * filtered on, and their statistics cost the writer a tenth of its time.
 */
const STATISTICS = new Set<Column['kind']>(['id', 'date', 'instant']);

/**
 * Parquet pages are compressed with zstd at level 3 (Node's zlib), the zstd
 * tool's default. On 1.3 million daily bars level 9 wrote 4 % fewer bytes
 * for 0.6 s more of the request thread's time (3.1 s against 2.5 s for the
 * whole file, before the statistics were cut).
 */
const zstdPage = (bytes: Uint8Array) => zstdCompressSync(bytes, { params: { [zlib.ZSTD_c_compressionLevel]: 3 } });

/** What the file says wrote it: a fixed string, so equal bars give equal bytes. */
const CREATED_BY = 'market-data-service';

/**
 * A ByteWriter that hands its bytes on after each row group (hyparquet-writer
 * flushes its writer there and waits for the promise), so a file holds at most
 * one row group in memory.
 */
class ChunkWriter extends ByteWriter {
  private readonly sink: (chunk: Buffer) => Promise<void>;

  constructor(sink: (chunk: Buffer) => Promise<void>) {
    super(1 << 20);
    this.sink = sink;
  }

  flush(): Promise<void> {
    const chunk = Buffer.from(this.buffer.slice(0, this.index));
    this.index = 0;
    return this.sink(chunk);
  }
}

function parquetFile(kind: BarKind, write: (chunk: Buffer) => Promise<void>): BarFile {
  const columns = BAR_COLUMNS[kind];
  const gathered = new Gathered();
  const writer = new ChunkWriter(write);
  const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }, ...columns.map(parquetElement)];
  let parquet: ParquetWriter | undefined;
  const open = (meta: Meta | null) => {
    const kvMetadata = meta ? [{ key: 'meta', value: JSON.stringify(meta) }] : undefined;
    return (parquet ??= new ParquetWriter({ writer, schema, codec: 'ZSTD', compressors: { ZSTD: zstdPage }, kvMetadata, createdBy: CREATED_BY }));
  };
  const rowGroup = async (n: number) => {
    const pieces = gathered.take(n);
    const columnData = columns.map(({ name, kind, nullable }, c) => ({
      name,
      data: parquetValues(kind, nullable, pieces, c),
      ...PARQUET_ENCODINGS[kind],
      statistics: STATISTICS.has(kind),
    }));
    await open(null).write({ columnData, rowGroupSize: n });
  };
  return {
    textFormat: COLUMNAR_INPUT[kind],
    async add(instrumentId, parts) {
      gathered.add(pieceOf(kind, instrumentId, parts));
      while (gathered.rows >= BATCH_ROWS) await rowGroup(BATCH_ROWS);
    },
    async end(meta) {
      if (gathered.rows) await rowGroup(gathered.rows);
      const file = open(meta);
      // The footer's key-value metadata is read when the footer is written.
      file.kvMetadata = [{ key: 'meta', value: JSON.stringify(meta) }];
      await file.finish();
      await writer.flush();
      return Buffer.alloc(0);
    },
  };
}

// ---- CSV ----

function csvFile(kind: BarKind, write: (chunk: Buffer) => Promise<void>): BarFile {
  const framing = csvFraming(BAR_COLUMNS[kind].map(({ name }) => name));
  let begun = false;
  return {
    textFormat: 'csv',
    async add(_instrumentId, parts) {
      if (!begun) await write(framing.open);
      begun = true;
      for (const part of parts) await write(part);
    },
    async end(meta) {
      if (!begun) await write(framing.open);
      begun = true;
      await write(framing.close(meta));
      return Buffer.alloc(0);
    },
  };
}

/** The form a file of `Kind` bars takes them in: intraday reads write text only. */
export type BarFileInput<Kind extends BarKind> = Kind extends 'intraday' ? TextFormat : DailyBarsFormat;

/** A file of `kind` bars in `format`, its bytes handed to `write` in order (Arrow's head comes from end()). */
export function openBarFile<Kind extends BarKind>(format: BarFileFormat, kind: Kind, write: (chunk: Buffer) => Promise<void>): BarFile<BarFileInput<Kind>> {
  const file = format === 'arrow' ? arrowFile(kind, write) : format === 'parquet' ? parquetFile(kind, write) : csvFile(kind, write);
  return file as BarFile<BarFileInput<Kind>>;
}
