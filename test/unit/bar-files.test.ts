import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DuckDBInstance } from '@duckdb/node-api';
import { tableFromIPC } from 'apache-arrow';
import { describe, expect, it } from 'vitest';
import { packedInstantMs } from '../../server/prices/bar-columns.ts';
import { BATCH_ROWS, openBarFile, type BarFileFormat } from '../../server/prices/bar-files.ts';
import type { SymbolRun } from '../../server/prices/symbol-runs.ts';
import { packDaily, type PackedBar } from '../support/packed-daily.ts';

// Daily files longer than one batch, from series packed as PostgreSQL packs them: several Arrow record batches, each with its own
// dictionaries (the stream format's replacement), and several Parquet row
// groups, read back by apache-arrow and DuckDB.

const instruments = Array.from({ length: 60 }, (_, n) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`);
const BARS_EACH = 2_600; // 60 × 2,600 = 156,000 rows: several full batches and a part
const DAY_MS = 86_400_000;

function barsOf(n: number): PackedBar[] {
  return Array.from({ length: BARS_EACH }, (_, i) => {
    const close = (n + 1) * 10 + i / 1000;
    return {
      date: dateOf(i),
      open: i % 7 === 0 ? null : close - 0.5,
      high: close + 1,
      low: close - 1,
      close,
      volume: i % 11 === 0 ? null : 1000 + i,
      currency: n % 2 ? 'EUR' : 'USD',
      unit: 'per share',
      stale: i % 13 === 0,
      // Sources change between instruments, so each batch has its own dictionary; instrument 7's changes within its series.
      source: n === 7 && i >= 1000 ? 'vendor-late' : `vendor-${n % 5}`,
      asOfMs: asOfMsAt(n, i),
    };
  });
}

/** When instrument n's i-th bar became known: from the 1960s to the 2050s across the instruments, before and after 1970 and 2000. */
const asOfMsAt = (n: number, i: number) => Date.parse(`${dateOf(i)}T21:00:00.123Z`) + (n - 30) * 365 * DAY_MS;

const dateOf = (i: number) => new Date(Date.UTC(1990, 0, 1) + i * DAY_MS).toISOString().slice(0, 10);

/**
 * Each instrument's symbol on its i-th bar: instrument 7 is renamed at its
 * 1,000th bar, instrument 9 has none before its 365th; the others keep one.
 */
function symbolAt(n: number, i: number): string | null {
  if (n === 7) return i < 1000 ? 'OLD7' : 'NEW7';
  if (n === 9) return i < 365 ? null : 'LATE9';
  return `S${n}`;
}

/** The runs a read of the bars' whole window gives for instrument `n` (symbol-runs.ts). */
function runsOf(n: number): SymbolRun[] {
  const last = dateOf(BARS_EACH - 1);
  if (n === 7)
    return [
      { symbol: 'OLD7', from: dateOf(0), to: dateOf(999) },
      { symbol: 'NEW7', from: dateOf(1000), to: last },
    ];
  if (n === 9)
    return [
      { symbol: null, from: dateOf(0), to: dateOf(364) },
      { symbol: 'LATE9', from: dateOf(365), to: last },
    ];
  return [{ symbol: `S${n}`, from: dateOf(0), to: last }];
}

async function fileOf(format: BarFileFormat): Promise<Buffer> {
  const chunks: Buffer[] = [];
  const file = openBarFile(format, 'daily', async (chunk) => void chunks.push(Buffer.from(chunk)));
  // Instrument 3's records arrive in reverse date order: the file puts them in date order.
  for (const [n, id] of instruments.entries())
    await file.add(id, [packDaily(barsOf(n), n === 3 ? [...Array(BARS_EACH).keys()].reverse() : undefined)], runsOf(n));
  const head = await file.end({ asOf: '2020-01-01T00:00:00.000Z', source: 'vendor-0', stale: false });
  return Buffer.concat([head, ...chunks]);
}

const expectedAt = (row: number) => {
  const n = Math.floor(row / BARS_EACH);
  const i = row % BARS_EACH;
  return {
    id: instruments[n],
    symbol: symbolAt(n, i),
    close: (n + 1) * 10 + i / 1000,
    volume: i % 11 === 0 ? null : 1000 + i,
    source: n === 7 && i >= 1000 ? 'vendor-late' : `vendor-${n % 5}`,
    currency: n % 2 ? 'EUR' : 'USD',
    asOfMs: asOfMsAt(n, i),
  };
};

describe('a packed instant', () => {
  it('when PostgreSQL sends microseconds since 2000, then it is the millisecond since 1970 the JSON text writes, cut to the earlier one', () => {
    const at2000 = BigInt(Date.UTC(2000, 0, 1));
    expect(packedInstantMs(0n)).toBe(at2000);
    expect(packedInstantMs(999n)).toBe(at2000);
    expect(packedInstantMs(-1n)).toBe(at2000 - 1n);
    expect(packedInstantMs(-1000n)).toBe(at2000 - 1n);
    expect(packedInstantMs(-1001n)).toBe(at2000 - 2n);
    // 1969-12-31T23:59:59.9995Z is written 23:59:59.999Z: -1 ms since 1970.
    expect(packedInstantMs(-at2000 * 1000n - 500n)).toBe(-1n);
    // 2026-11-29T18:00:00.123456Z.
    expect(packedInstantMs(BigInt(Date.UTC(2026, 10, 29, 18, 0, 0, 123) - Date.UTC(2000, 0, 1)) * 1000n + 456n)).toBe(
      BigInt(Date.UTC(2026, 10, 29, 18, 0, 0, 123)),
    );
  });
});

describe('columnar bar files longer than a batch', () => {
  it('when 156,000 bars are written as Arrow, then apache-arrow reads its batches with every value, dictionaries replaced batch by batch', async () => {
    const table = tableFromIPC(await fileOf('arrow'));
    expect(table.numRows).toBe(instruments.length * BARS_EACH);
    const total = instruments.length * BARS_EACH;
    const full = Math.floor(total / BATCH_ROWS);
    expect(full).toBeGreaterThanOrEqual(2);
    expect(table.batches.map((b) => b.numRows)).toEqual([...Array<number>(full).fill(BATCH_ROWS), total - full * BATCH_ROWS]);
    const rowOf = (n: number, i: number) => n * BARS_EACH + i;
    const rows = [0, 1, BATCH_ROWS - 1, BATCH_ROWS, 2 * BATCH_ROWS + 5, table.numRows - 1, rowOf(3, 0), rowOf(3, 1), rowOf(7, 999), rowOf(7, 1000)];
    for (const row of [...rows, rowOf(9, 0), rowOf(9, 364), rowOf(9, 365)]) {
      const want = expectedAt(row);
      expect(table.getChild('instrumentId')?.get(row)).toBe(want.id);
      expect(table.getChild('symbol')?.get(row)).toBe(want.symbol);
      expect(table.getChild('closePrice')?.get(row)).toBe(want.close);
      expect(table.getChild('volume')?.get(row)).toBe(want.volume);
      expect(table.getChild('source')?.get(row)).toBe(want.source);
      expect(table.getChild('quoteCurrency')?.get(row)).toBe(want.currency);
      expect(Number(table.getChild('asOf')?.get(row))).toBe(want.asOfMs);
    }
    expect(table.schema.fields.slice(0, 3).map((f) => `${f.name}:${String(f.type)}:${f.nullable}`)).toEqual([
      'instrumentId:Dictionary<Int32, Utf8>:false',
      'symbol:Dictionary<Int32, Utf8>:true',
      'barDate:Date32<DAY>:false',
    ]);
    expect(table.getChild('symbol')?.nullCount).toBe(365);
    expect(JSON.parse(table.schema.metadata.get('meta') as string).source).toBe('vendor-0');
  });

  it('when they are written as Parquet, then DuckDB reads its row groups, the same sums, counts of nulls and distinct values, and the same bytes each time', async () => {
    const bytes = await fileOf('parquet');
    expect((await fileOf('parquet')).equals(bytes)).toBe(true);
    const dir = await mkdtemp(path.join(os.tmpdir(), 'mds-bar-files-'));
    try {
      const file = path.join(dir, 'bars.parquet');
      await writeFile(file, bytes);
      const duck = await (await DuckDBInstance.create(':memory:')).connect();
      const groups = await duck.runAndReadAll(`select count(distinct row_group_id) as n, min(compression) as codec from parquet_metadata('${file}')`);
      expect(groups.getRowObjectsJS()[0]).toEqual({ n: BigInt(Math.ceil((instruments.length * BARS_EACH) / BATCH_ROWS)), codec: 'ZSTD' });
      const [stats] = (
        await duck.runAndReadAll(
          `select count(*) as n, count(distinct "instrumentId") as ids, count(*) - count(volume) as nullVolumes, count(*) - count("openPrice") as nullOpens,
             count(distinct source) as sources, sum(stale::int) as stale, count(distinct symbol) as symbols, count(*) - count(symbol) as nullSymbols
           from read_parquet('${file}')`,
        )
      ).getRowObjectsJS();
      const perInstrument = (pred: (i: number) => boolean) => instruments.length * Array.from({ length: BARS_EACH }, (_, i) => i).filter(pred).length;
      expect(stats).toEqual({
        n: BigInt(instruments.length * BARS_EACH),
        ids: BigInt(instruments.length),
        nullVolumes: BigInt(perInstrument((i) => i % 11 === 0)),
        nullOpens: BigInt(perInstrument((i) => i % 7 === 0)),
        sources: 6n,
        stale: BigInt(perInstrument((i) => i % 13 === 0)),
        // S0 … S59 less S7 and S9, then OLD7, NEW7 and LATE9.
        symbols: BigInt(instruments.length - 2 + 3),
        nullSymbols: 365n,
      });
      const rows = (
        await duck.runAndReadAll(`select "instrumentId", symbol, "closePrice", volume, source, epoch_ms("asOf") as "asOfMs" from read_parquet('${file}')`)
      ).getRowObjectsJS();
      const rowOf = (n: number, i: number) => n * BARS_EACH + i;
      for (const row of [0, BATCH_ROWS, rows.length - 1, rowOf(7, 999), rowOf(7, 1000), rowOf(9, 364), rowOf(9, 365)]) {
        const want = expectedAt(row);
        expect(rows[row]).toEqual({
          instrumentId: want.id,
          symbol: want.symbol,
          closePrice: want.close,
          volume: want.volume,
          source: want.source,
          asOfMs: BigInt(want.asOfMs),
        });
      }
      // Every row group's symbol column is dictionary-encoded.
      const encodings = await duck.runAndReadAll(`select distinct encodings from parquet_metadata('${file}') where path_in_schema = 'symbol'`);
      expect(encodings.getRowObjectsJS().map((r) => String(r.encodings))).toEqual([expect.stringContaining('RLE_DICTIONARY')]);
      duck.closeSync();
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
