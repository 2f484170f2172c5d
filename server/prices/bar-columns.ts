import type { z } from 'zod';
import type { Meta } from '../core/meta.ts';
import { DAILY_BAR, ID_FIELD, INTRADAY_BAR, type BarField } from './bar-text-sql.ts';
import { DailyBarSchema, IntradayBarSchema } from './schema.ts';
import type { DailyBarsFormat } from './daily-text-repository.ts';
import { symbolsOfDays, type SymbolRun } from './symbol-runs.ts';
import { dateOrder, inOrder, PACKED_BAR_BYTES } from './packed-columns.ts';

// The bars of the columnar files (bar-files.ts) as columns: what each file
// holds, and the pieces of series gathered into batches of a fixed size.

export type BarKind = 'daily' | 'intraday';

export interface BarFile<Input extends DailyBarsFormat = DailyBarsFormat> {
  /** The form add() takes the bars in: packed columns for columnar files, CSV rows for CSV. */
  readonly textFormat: Input;
  /**
   * One instrument's bars in date (time) order, as the price reads' text
   * parts in textFormat, with the instrument's symbols over the read's window
   * (a CSV row carries its own); how many bars they were.
   */
  add(instrumentId: string, parts: Buffer[], symbols: SymbolRun[]): Promise<number>;
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
 * fixed count, so the same bars always make the same file. On 1.3 million
 * daily bars a Parquet row group of 32,768 took about 50 ms of the request
 * thread (92 at most), one of 65,536 about 110 (164 at most), for the same
 * bytes within 0.5 %; it is written a column at a time (bar-parquet.ts,
 * writeRowGroup). An Arrow batch takes 8 to 15 ms.
 */
export const BATCH_ROWS = 32_768;

export interface Column {
  name: string;
  kind: BarField[1];
  nullable: boolean;
}

/** The instrument's symbol on the bar's day (symbol-runs.ts); null where it had none. */
export const SYMBOL_COLUMN: Column = { name: 'symbol', kind: 'text', nullable: true };

function columnsOf(fields: BarField[], schema: z.ZodObject): Column[] {
  const [id, ...rest] = [ID_FIELD, ...fields].map(([name, kind]) => ({ name, kind, nullable: schema.shape[name]?.safeParse(null).success ?? false }));
  return [id, SYMBOL_COLUMN, ...rest];
}

export const BAR_COLUMNS: Record<BarKind, Column[]> = {
  daily: columnsOf(DAILY_BAR, DailyBarSchema),
  intraday: columnsOf(INTRADAY_BAR, IntradayBarSchema),
};

const DAY_MS = 86_400_000;

/**
 * A column's values for some bars: numbers as float64 (NaN where absent),
 * dates as days since 1970-01-01, instants as milliseconds since 1970,
 * booleans as bytes (1 or 0), strings (null where absent) one per bar or, as
 * a one-element array, one for every bar.
 */
type Values = Float64Array | Int32Array | BigInt64Array | Uint8Array | (string | null)[];

/** Some bars of one instrument as columns, in the order of BAR_COLUMNS. */
export interface Piece {
  rows: number;
  columns: Values[];
}

/** 2000-01-01T00:00:00Z in milliseconds since 1970: PostgreSQL's epoch for timestamptz_send. */
const POSTGRES_EPOCH_MS = 946_684_800_000n;

/**
 * An instant as timestamptz_send writes it (microseconds since 2000-01-01
 * UTC) in milliseconds since 1970, cut to the earlier millisecond as the
 * JSON's text is (to_char's MS): 1969-12-31T23:59:59.9995Z is -1.
 */
export function packedInstantMs(micros: bigint): bigint {
  const ms = micros / 1000n;
  return (micros % 1000n < 0n ? ms - 1n : ms) + POSTGRES_EPOCH_MS;
}

/**
 * A daily series packed by PostgreSQL (daily-text-repository.ts, packedBars) as a Piece, in date order.
 * The values are read through a DataView, whose big-endian reads V8 compiles
 * to a load and a byte swap: on 1.26 million bars (5,000 series of 252) this
 * took 110 ms against 250 by Buffer's readDoubleBE and readBigInt64BE.
 */
function unpackDaily(instrumentId: string, packed: Buffer, symbols: SymbolRun[]): Piece {
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  const n = view.getInt32(0);
  const days = new Int32Array(n);
  for (let i = 0, at = 4; i < n; i++, at += PACKED_BAR_BYTES) days[i] = view.getInt32(at);
  // The records come in no set order.
  const order = dateOrder(days);
  const numbers = Array.from({ length: 5 }, () => new Float64Array(n));
  const [open, high, low, close, volume] = numbers;
  const asOf = new BigInt64Array(n);
  const stale = new Uint8Array(n);
  const dates = inOrder(days, order);
  // A series' bars mostly share a few asOf instants (one per load): each is
  // converted once, recognised by its two halves without making a bigint.
  let high32 = 0;
  let low32 = 0;
  let ms: bigint | undefined;
  for (let i = 0; i < n; i++) {
    const at = 4 + (order ? order[i] : i) * PACKED_BAR_BYTES;
    open[i] = view.getFloat64(at + 4);
    high[i] = view.getFloat64(at + 12);
    low[i] = view.getFloat64(at + 20);
    close[i] = view.getFloat64(at + 28);
    volume[i] = view.getFloat64(at + 36);
    const nextHigh = view.getInt32(at + 44);
    const nextLow = view.getInt32(at + 48);
    if (ms === undefined || nextHigh !== high32 || nextLow !== low32) {
      high32 = nextHigh;
      low32 = nextLow;
      ms = packedInstantMs(view.getBigInt64(at + 44));
    }
    asOf[i] = ms;
    stale[i] = packed[at + 52];
  }
  const texts = (JSON.parse(packed.toString('utf8', 4 + n * PACKED_BAR_BYTES)) as (string | [number, string])[][]).map((values) => {
    if (values.length === 1 && typeof values[0] === 'string') return values as string[];
    const byDay = new Map((values as [number, string][]).map(([day, value]) => [day, value]));
    return Array.from(dates, (day) => byDay.get(day) as string);
  });
  const [currency, unit, source] = texts;
  // BAR_COLUMNS.daily: instrumentId, symbol, barDate, open, high, low, close, volume, quoteCurrency, quoteUnit, stale, asOf, source.
  return { rows: n, columns: [[instrumentId], symbolsOfDays(symbols, () => dates), dates, ...numbers, currency, unit, stale, asOf, source] };
}

/** The bytes of one packed intraday bar (intraday-text-repository.ts, packedIntradayBars): its start, five doubles. */
const PACKED_INTRADAY_BAR_BYTES = 8 + 5 * 8;

/**
 * An intraday series packed by PostgreSQL (packedIntradayBars), in parts
 * (one per statement of a read split in two), as a Piece in time order: a
 * bar's symbol is its UTC day's.
 */
function unpackIntraday(instrumentId: string, parts: Buffer[], symbols: SymbolRun[]): Piece {
  const counts = parts.map((part) => part.readInt32BE(0));
  const n = counts.reduce((sum, count) => sum + count, 0);
  const starts = new BigInt64Array(n);
  const numbers = Array.from({ length: 5 }, () => new Float64Array(n));
  // Each part's texts: one value for all its bars, or one per bar.
  const partTexts: (string | string[])[][] = [];
  let row = 0;
  for (const [p, part] of parts.entries()) {
    const count = counts[p];
    const first = row;
    // Read through a DataView, as unpackDaily reads (its comment says why).
    const view = new DataView(part.buffer, part.byteOffset, part.byteLength);
    for (let i = 0, at = 4; i < count; i++, row++, at += PACKED_INTRADAY_BAR_BYTES) {
      starts[row] = packedInstantMs(view.getBigInt64(at));
      for (let c = 0; c < 5; c++) numbers[c][row] = view.getFloat64(at + 8 + 8 * c);
    }
    const columns = JSON.parse(part.toString('utf8', 4 + count * PACKED_INTRADAY_BAR_BYTES)) as (string | [string, string])[][];
    partTexts.push(
      columns.map((values) => {
        if (values.length === 1 && typeof values[0] === 'string') return values[0];
        const byStart = new Map((values as [string, string][]).map(([start, value]) => [Date.parse(start), value]));
        return Array.from(starts.subarray(first, row), (ms) => byStart.get(Number(ms)) as string);
      }),
    );
  }
  const order = dateOrder(starts);
  const times = inOrder(starts, order);
  // A text column: one value when every part has that one, else one per bar in time order.
  const texts = [0, 1, 2].map((c): string[] => {
    const values = partTexts.map((texts) => texts[c]);
    if (values.every((v) => v === values[0] && typeof v === 'string')) return [values[0] as string];
    const perBar = values.flatMap((v, p) => (typeof v === 'string' ? Array<string>(counts[p]).fill(v) : v));
    return order ? Array.from(order, (k) => perBar[k]) : perBar;
  });
  // BAR_COLUMNS.intraday: instrumentId, symbol, barTimestamp, open, high, low, close, volume, quoteCurrency, quoteUnit, source.
  return {
    rows: n,
    columns: [
      [instrumentId],
      symbolsOfDays(symbols, () => Int32Array.from(times, (ms) => Math.floor(Number(ms) / DAY_MS))),
      times,
      ...numbers.map((values) => inOrder(values, order)),
      ...texts,
    ],
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
export class Gathered {
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

/** Column `c` of the pieces, joined into one typed array of `Type`: their bytes copied one after another. */
export function joined<T extends Float64Array | Int32Array | BigInt64Array | Uint8Array>(
  pieces: Piece[],
  c: number,
  Type: { new (n: number): T; BYTES_PER_ELEMENT: number },
): T {
  const out = new Type(pieces.reduce((n, p) => n + p.rows, 0));
  const bytes = new Uint8Array(out.buffer);
  let at = 0;
  for (const piece of pieces) {
    const values = piece.columns[c];
    if (Array.isArray(values)) throw new Error(`column ${c} holds text, not ${Type.name} values`);
    bytes.set(new Uint8Array(values.buffer, values.byteOffset, values.byteLength), at);
    at += values.byteLength;
  }
  return out;
}

/** Column `c` of the pieces as one string (or null) per row. */
export function strings(pieces: Piece[], c: number): (string | null)[] {
  const out = new Array<string | null>(pieces.reduce((n, p) => n + p.rows, 0));
  let at = 0;
  for (const piece of pieces) {
    const values = piece.columns[c] as (string | null)[];
    if (values.length === piece.rows) for (let i = 0; i < piece.rows; i++) out[at++] = values[i];
    else {
      out.fill(values[0], at, at + piece.rows);
      at += piece.rows;
    }
  }
  return out;
}

/** How the columnar files take their bars: packed by PostgreSQL (packedBars, packedIntradayBars). */
export const COLUMNAR_INPUT = { daily: 'packed', intraday: 'packed' } as const satisfies Record<BarKind, DailyBarsFormat>;

/** One instrument's bars, as the read handed them over for a `kind` file, with its symbols, as a Piece. */
export function pieceOf(kind: BarKind, instrumentId: string, parts: Buffer[], symbols: SymbolRun[]): Piece {
  if (kind === 'intraday') return unpackIntraday(instrumentId, parts, symbols);
  return unpackDaily(instrumentId, parts.length === 1 ? parts[0] : Buffer.concat(parts), symbols);
}
