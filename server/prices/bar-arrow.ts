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
import type { Meta } from '../core/meta.ts';
import { BAR_COLUMNS, BATCH_ROWS, COLUMNAR_INPUT, Gathered, joined, pieceOf, type BarFile, type BarKind, type Column, type Piece } from './bar-columns.ts';

// The Arrow IPC stream of bar-files.ts: one record batch per BATCH_ROWS bars,
// each with its own dictionaries, and the schema, which carries the meta,
// returned by end() to go first.

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

/** Column `c` of the pieces as Arrow data of `type`: dictionary codes in first-seen order, NaN and a null string as null. */
function arrowColumn(type: DataType, pieces: Piece[], c: number): Data {
  const length = pieces.reduce((n, p) => n + p.rows, 0);
  if (type instanceof Dictionary) {
    const codes = new Map<string, number>();
    const indices = new Int32Array(length);
    const absent: number[] = [];
    let at = 0;
    for (const piece of pieces) {
      const values = piece.columns[c] as (string | null)[];
      for (let i = 0; i < piece.rows; i++, at++) {
        const v = values.length === piece.rows ? values[i] : values[0];
        if (v === null) {
          absent.push(at);
          continue;
        }
        let code = codes.get(v);
        if (code === undefined) codes.set(v, (code = codes.size));
        indices[at] = code;
      }
    }
    const dictionary = vectorFromArray([...codes.keys()], new Utf8());
    if (!absent.length) return makeData({ type, length, nullCount: 0, data: indices, dictionary });
    const nulls = new Set(absent);
    return makeData({ type, length, nullCount: absent.length, nullBitmap: bitmapOf(length, (i) => !nulls.has(i)).bitmap, data: indices, dictionary });
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

export function arrowFile(kind: BarKind, write: (chunk: Buffer) => Promise<void>): BarFile {
  const columns = BAR_COLUMNS[kind];
  const schema = arrowSchema(columns);
  const gathered = new Gathered();
  return {
    textFormat: COLUMNAR_INPUT[kind],
    async add(instrumentId, parts, symbols) {
      const piece = pieceOf(kind, instrumentId, parts, symbols);
      gathered.add(piece);
      while (gathered.rows >= BATCH_ROWS) await write(arrowBatchMessages(schema, gathered.take(BATCH_ROWS)));
      return piece.rows;
    },
    async end(meta) {
      if (gathered.rows) await write(arrowBatchMessages(schema, gathered.take(gathered.rows)));
      await write(ARROW_EOS);
      return arrowHead(columns, meta);
    },
  };
}
