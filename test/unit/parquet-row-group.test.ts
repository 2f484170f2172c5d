import { zstdCompressSync } from 'node:zlib';
import { ByteWriter, ParquetWriter, type SchemaElement } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { writeRowGroup, type RowGroupColumn } from '../../server/prices/bar-parquet.ts';

// writeRowGroup writes a row group column by column, yielding between them,
// by the calls hyparquet-writer's own write() makes. Its bytes must be
// write()'s: a file the service writes is promised byte for byte, and a
// version of the library that changes those calls must fail here first.

const ROWS = 5_000;

const schema: SchemaElement[] = [
  { name: 'root', num_children: 8 },
  { name: 'instrumentId', type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' }, repetition_type: 'REQUIRED' },
  { name: 'symbol', type: 'BYTE_ARRAY', converted_type: 'UTF8', logical_type: { type: 'STRING' }, repetition_type: 'OPTIONAL' },
  { name: 'barDate', type: 'INT32', converted_type: 'DATE', logical_type: { type: 'DATE' }, repetition_type: 'REQUIRED' },
  { name: 'openPrice', type: 'DOUBLE', repetition_type: 'OPTIONAL' },
  { name: 'highPrice', type: 'DOUBLE', repetition_type: 'OPTIONAL' },
  { name: 'closePrice', type: 'DOUBLE', repetition_type: 'REQUIRED' },
  { name: 'stale', type: 'BOOLEAN', repetition_type: 'REQUIRED' },
  {
    name: 'asOf',
    type: 'INT64',
    converted_type: 'TIMESTAMP_MILLIS',
    logical_type: { type: 'TIMESTAMP', isAdjustedToUTC: true, unit: 'MILLIS' },
    repetition_type: 'REQUIRED',
  },
];

/** Rows `from` to `from + n` of each column: a few instruments, a symbol absent at times, opens absent every 7th row, highs optional but all present (a typed array), prices long enough for plain pages. */
function columns(from: number, n: number): RowGroupColumn[] {
  const rows = Array.from({ length: n }, (_, k) => from + k);
  const ids = ['a', 'b', 'c'].map((c) => Buffer.from(`00000000-0000-4000-8000-00000000000${c}`));
  return [
    { name: 'instrumentId', data: rows.map((i) => ids[Math.floor(i / 4_000)]), statistics: true },
    { name: 'symbol', data: rows.map((i) => (i % 900 < 50 ? null : Buffer.from(`S${Math.floor(i / 4_000)}`))), encoding: 'RLE_DICTIONARY', statistics: false },
    { name: 'barDate', data: Int32Array.from(rows, (i) => 7_000 + (i % 4_000)), encoding: 'DELTA_BINARY_PACKED', statistics: true },
    { name: 'openPrice', data: rows.map((i) => (i % 7 === 0 ? null : 100 + Math.sin(i) * 10)), statistics: false },
    { name: 'highPrice', data: Float64Array.from(rows, (i) => 110 + Math.sin(i) * 10), statistics: false },
    { name: 'closePrice', data: Float64Array.from(rows, (i) => Math.round((100 + Math.cos(i) * 10) * 100) / 100), statistics: false },
    { name: 'stale', data: rows.map((i) => i % 13 === 0), statistics: false },
    { name: 'asOf', data: BigInt64Array.from(rows, (i) => BigInt(1_600_000_000_000 + i * 86_400_000)), encoding: 'DELTA_BINARY_PACKED', statistics: true },
  ];
}

function fileWriter(): { writer: ByteWriter; parquet: ParquetWriter } {
  const writer = new ByteWriter();
  const parquet = new ParquetWriter({ writer, schema, codec: 'ZSTD', compressors: { ZSTD: (bytes) => zstdCompressSync(bytes) }, createdBy: 'test' });
  return { writer, parquet };
}

describe('a Parquet row group written column by column', () => {
  it("when three row groups are written by writeRowGroup and by the library's write(), then the two files are the same bytes", async () => {
    const groups = [
      [0, ROWS],
      [ROWS, ROWS],
      [2 * ROWS, 1_234],
    ] as const;
    const ours = fileWriter();
    for (const [from, n] of groups) await writeRowGroup(ours.parquet, columns(from, n), n);
    const library = fileWriter();
    for (const [from, n] of groups) await library.parquet.write({ columnData: columns(from, n), rowGroupSize: n });
    for (const { parquet } of [ours, library]) {
      parquet.kvMetadata = [{ key: 'meta', value: '{}' }];
      await parquet.finish();
    }
    const bytes = Buffer.from(ours.writer.getBytes());
    expect(ours.parquet.row_groups.map((g) => Number(g.num_rows))).toEqual([ROWS, ROWS, 1_234]);
    expect(bytes.length).toBeGreaterThan(10_000);
    expect(bytes.equals(Buffer.from(library.writer.getBytes()))).toBe(true);
  });

  it('when a boolean column of more than 16 rows comes as the bytes 1 and 0, then the file is the bytes write() makes of booleans', async () => {
    const asBytes = (group: RowGroupColumn[]) =>
      group.map((c) => (c.name === 'stale' ? { ...c, data: Uint8Array.from(c.data as boolean[], (stale) => (stale ? 1 : 0)) } : c));
    const ours = fileWriter();
    await writeRowGroup(ours.parquet, asBytes(columns(0, 40)), 40);
    const library = fileWriter();
    await library.parquet.write({ columnData: columns(0, 40), rowGroupSize: 40 });
    for (const { parquet } of [ours, library]) await parquet.finish();
    expect((columns(0, 40).find((c) => c.name === 'stale')?.data as boolean[]).filter(Boolean)).toHaveLength(4);
    expect(Buffer.from(ours.writer.getBytes()).equals(Buffer.from(library.writer.getBytes()))).toBe(true);
  });

  it('when a column holds fewer values than the group has rows, then nothing is written and the column is named', async () => {
    const { writer, parquet } = fileWriter();
    const short = columns(0, 10).map((c) => (c.name === 'barDate' ? { ...c, data: new Int32Array(9) } : c));
    await expect(writeRowGroup(parquet, short, 10)).rejects.toThrow('barDate');
    expect(parquet.row_groups).toEqual([]);
    expect(writer.offset).toBe(4);
  });
});
