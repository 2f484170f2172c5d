import { ByteWriter, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import { writeColumn } from 'hyparquet-writer/src/column.js';
import { estimateValueSize } from 'hyparquet-writer/src/dictionary.js';
import { encodeNestedValues } from 'hyparquet-writer/src/dremel.js';
import { schemaPathResolver } from 'hyparquet-writer/src/schema.js';
import { zstdCompressSync, constants as zlib } from 'node:zlib';
import { ThreadTurns } from '../core/thread-turns.ts';
import {
  BAR_COLUMNS,
  BATCH_ROWS,
  COLUMNAR_INPUT,
  Gathered,
  joined,
  pieceOf,
  strings,
  SYMBOL_COLUMN,
  type BarFile,
  type BarKind,
  type Column,
  type Piece,
} from './bar-columns.ts';

// The Parquet file of bar-files.ts: one row group per BATCH_ROWS bars, handed
// on as it is written, and the footer, which carries the meta, last.

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
      return nullable && hasNaN(values) ? Array.from(values, (v) => (Number.isNaN(v) ? null : v)) : values;
    }
    case 'date':
      return joined(pieces, c, Int32Array);
    case 'instant':
      return joined(pieces, c, BigInt64Array);
    case 'boolean':
      // As the bytes 1 and 0 (writeRowGroup hands the library booleans where it needs them).
      return joined(pieces, c, Uint8Array);
    default:
      // As strings: the writer encodes only a dictionary's distinct values to
      // UTF-8, and its statistics compare a row's string with the last by
      // identity first. Encoding every row beforehand cost a ten-year export
      // of 1.3 million daily bars about 0.7 s more under the profiler (in
      // this function and the statistics), for the same bytes.
      return strings(pieces, c);
  }
}

/** Whether any value is NaN: a loop, which V8 runs several times faster than some(Number.isNaN). */
function hasNaN(values: Float64Array): boolean {
  for (let i = 0; i < values.length; i++) if (values[i] !== values[i]) return true;
  return false;
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
 * The encoding of a column: the symbol is always dictionary-encoded, as in
 * the Arrow answer, a run or two of one value per series (the writer's own
 * choice leaves a column plain where a dictionary would not halve it, as in
 * a row group of a few bars); the others as PARQUET_ENCODINGS says.
 */
const encodingOf = (column: Column) => (column === SYMBOL_COLUMN ? { encoding: 'RLE_DICTIONARY' as const } : PARQUET_ENCODINGS[column.kind]);

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

/** A column of a row group as writeRowGroup takes it: ParquetWriter.write's, for a flat column. */
export interface RowGroupColumn {
  name: string;
  data: ParquetColumn;
  encoding?: 'DELTA_BINARY_PACKED' | 'RLE_DICTIONARY';
  statistics: boolean;
}

/** hyparquet-writer's page size when write() is given none. */
const PAGE_SIZE = 1_048_576;

// writeRowGroup hands writeColumn a flat column as write() would, with the
// same bytes (test/unit/parquet-row-group.test.ts holds them to write()'s),
// but without three passes of the library's over every value that change
// nothing for the typed arrays bar-columns.ts makes. With them, and the
// columns parquetValues hands over as typed arrays (booleans as bytes, a
// loop for NaN), writing a year of 500 instruments' daily bars (130,500
// rows) to Parquet took 0.78 times the CPU it took before (0.73 with an
// absent open every 97th bar; medians of 37 and 27 interleaved rounds'
// ratios), for the same bytes.

/**
 * A date or instant column given as typed days or milliseconds, with its
 * physical element alone (type and repetition): the library converts a
 * column with its logical type (unconvert) by copying it into an array (of
 * bigints, for instants) whose values are the same numbers. The file's schema
 * keeps the logical types; a column chunk and its statistics are written
 * from the physical type alone.
 */
function physicalElement(element: SchemaElement, data: ParquetColumn): SchemaElement {
  const typed = data instanceof Int32Array || data instanceof BigInt64Array;
  const logical = element.converted_type === 'DATE' || element.converted_type === 'TIMESTAMP_MILLIS';
  return typed && logical ? { name: element.name, type: element.type, repetition_type: element.repetition_type } : element;
}

/**
 * Whether a fixed-width column of `rows` values fits in one page of
 * PAGE_SIZE, dictionary indexes (4 bytes) included, by the widths the
 * library counts (estimateValueSize): then the page size is left out, and
 * the library writes one page without estimating each value's size to find
 * it.
 */
function onePage(element: SchemaElement, rows: number): boolean {
  const width = element.type && element.type !== 'BYTE_ARRAY' ? estimateValueSize(0, element.type, element.type_length) : 0;
  return rows > 0 && width > 0 && rows * Math.max(width, 4) < PAGE_SIZE;
}

/**
 * A flat column's values and page data as the library takes them, with the
 * same bytes as the data it was given:
 * - booleans given as the bytes 1 and 0: the library RLE-encodes a group of
 *   more than 16 values by their numbers, so the bytes stand as they are; a
 *   smaller group is written plain, from booleans only;
 * - an optional column given as a typed array, which holds no null: its
 *   definition levels all 1 at once, where encodeNestedValues would test
 *   every value for null.
 */
function flatPageData(treePath: Parameters<typeof encodeNestedValues>[0], element: SchemaElement, data: ParquetColumn): ReturnType<typeof encodeNestedValues> {
  const values = data instanceof Uint8Array && element.type === 'BOOLEAN' && data.length <= 16 ? Array.from(data, (v) => v === 1) : data;
  if (!ArrayBuffer.isView(values) || element.repetition_type !== 'OPTIONAL') return encodeNestedValues(treePath, values);
  return { values, definitionLevels: allPresent(values.length), repetitionLevels: [], maxDefinitionLevel: 1 };
}

/**
 * Definition levels of `n` values none of which is null, all 1. The
 * library reads the levels and copies them into pages, never writes them, so
 * one array of BATCH_ROWS serves every full group of every file, however
 * many files a job writes at once (job.ts), and the last shorter size asked
 * for serves each column of a file's last group.
 */
const FULL_GROUP_PRESENT: number[] = ones(BATCH_ROWS);
let lastGroupPresent: number[] = [];
function allPresent(n: number): number[] {
  if (n === BATCH_ROWS) return FULL_GROUP_PRESENT;
  if (lastGroupPresent.length !== n) lastGroupPresent = ones(n);
  return lastGroupPresent;
}

function ones(n: number): number[] {
  const levels: number[] = [];
  for (let i = 0; i < n; i++) levels.push(1);
  return levels;
}

/**
 * Writes the columns of one row group of `rows` rows into `file`, as its
 * write() does for flat columns (hyparquet-writer 0.17: the same calls, so
 * the same bytes, which test/unit/parquet-row-group.test.ts checks against
 * write()), but waiting a turn of the event loop after a column once the
 * group has held the thread 5 ms (ThreadTurns): write() holds it for the whole
 * group, 100 to 150 ms under the profiler for 32,768 daily bars, and a daily
 * export delayed the request thread's other work by up to 207 ms (p99 147 ms)
 * that way, by 73 ms (p99 47 ms) column by column
 * (bench/results/exports.json). A small group (one instrument's year) takes
 * a few milliseconds and is written without a wait.
 */
export async function writeRowGroup(file: ParquetWriter, columns: RowGroupColumn[], rows: number): Promise<void> {
  const resolve = schemaPathResolver(file.schema);
  const start = file.writer.offset;
  const chunks: ParquetWriter['row_groups'][number]['columns'] = [];
  const short = columns.find(({ data }) => data.length !== rows);
  if (short) throw new Error(`parquet column ${short.name} holds ${short.data.length} values, not ${rows}`);
  const turns = new ThreadTurns();
  for (const { name, data, encoding, statistics } of columns) {
    const treePath = resolve([name]);
    const schemaPath = treePath.map((node) => node.element);
    const element = schemaPath[schemaPath.length - 1];
    const flat = treePath.length === 2;
    const result = writeColumn({
      writer: file.writer,
      column: {
        columnName: name,
        element: flat ? physicalElement(element, data) : element,
        schemaPath,
        codec: file.codec,
        compressors: file.compressors,
        stats: statistics,
        statisticsTruncateLength: file.statisticsTruncateLength,
        pageSize: flat && onePage(element, rows) ? 0 : PAGE_SIZE,
        columnIndex: false,
        offsetIndex: true,
        encoding,
      },
      pageData: flat ? flatPageData(treePath, element, data) : encodeNestedValues(treePath, data),
    });
    chunks.push(result.chunk);
    file.pendingIndexes.push(result);
    await turns.take();
  }
  let totalByteSize = 0n;
  for (const { meta_data } of chunks) totalByteSize += meta_data?.total_uncompressed_size ?? 0n;
  file.num_rows += BigInt(rows);
  file.row_groups.push({ columns: chunks, total_byte_size: totalByteSize, num_rows: BigInt(rows), total_compressed_size: BigInt(file.writer.offset - start) });
  await file.writer.flush?.();
}

export function parquetFile(kind: BarKind, write: (chunk: Buffer) => Promise<void>): BarFile {
  const columns = BAR_COLUMNS[kind];
  const gathered = new Gathered();
  const writer = new ChunkWriter(write);
  const schema: SchemaElement[] = [{ name: 'root', num_children: columns.length }, ...columns.map(parquetElement)];
  let parquet: ParquetWriter | undefined;
  // The meta is known only at the end: end() sets the footer's key-value metadata, which is read when the footer is written.
  const open = () => (parquet ??= new ParquetWriter({ writer, schema, codec: 'ZSTD', compressors: { ZSTD: zstdPage }, createdBy: CREATED_BY }));
  const rowGroup = async (n: number) => {
    const pieces = gathered.take(n);
    const columnData = columns.map((column, c) => ({
      name: column.name,
      data: parquetValues(column.kind, column.nullable, pieces, c),
      ...encodingOf(column),
      statistics: STATISTICS.has(column.kind),
    }));
    await writeRowGroup(open(), columnData, n);
  };
  return {
    textFormat: COLUMNAR_INPUT[kind],
    async add(instrumentId, parts, symbols) {
      const piece = pieceOf(kind, instrumentId, parts, symbols);
      gathered.add(piece);
      while (gathered.rows >= BATCH_ROWS) await rowGroup(BATCH_ROWS);
      return piece.rows;
    },
    async end(meta) {
      if (gathered.rows) await rowGroup(gathered.rows);
      const file = open();
      file.kvMetadata = [{ key: 'meta', value: JSON.stringify(meta) }];
      await file.finish();
      await writer.flush();
      return Buffer.alloc(0);
    },
  };
}
