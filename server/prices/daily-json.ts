import { dayToDate } from '../core/day-numbers.ts';
import { pieceOf } from './bar-columns.ts';
import { DAILY_BAR } from './bar-text-sql.ts';
import type { DailyBarsFormat, DailySeriesText } from './daily-text-repository.ts';

// The daily JSON answers' bars, written on the request thread from the series
// PostgreSQL packed (daily-text-repository.ts, packedBars): each bar as the
// object JSON.stringify writes for it, its keys in the spec's order.
//
// PostgreSQL writing the same text took most of a bulk read's database time:
// on 500 instruments' adjusted year (131,000 bars, 32 MB), the database took
// 1,300 ms of CPU a read writing the text and 760 ms packing the bars, and the
// service 345 ms passing the text on against 420 writing it here; the read
// took 0.75 times as long (the median of 20 interleaved rounds).

/** Where a series' bars are written, grown by doubling when its texts are longer than foreseen. */
class Out {
  bytes: Buffer;
  at = 0;
  /** The scale of the last number written (putNumber): a series' values are mostly of one magnitude. */
  scale = 0;

  constructor(size: number) {
    this.bytes = Buffer.allocUnsafe(size);
  }

  room(n: number): void {
    if (this.at + n <= this.bytes.length) return;
    const grown = Buffer.allocUnsafe(Math.max(this.bytes.length * 2, this.at + n));
    this.bytes.copy(grown, 0, 0, this.at);
    this.bytes = grown;
  }

  put(part: Uint8Array): void {
    this.room(part.length);
    this.bytes.set(part, this.at);
    this.at += part.length;
  }
}

/** 10^k for k = 0..22, the powers of ten a double holds exactly, each read from its decimal. */
const POW10 = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));
const NULL = Buffer.from('null');
const ZERO = Buffer.from('0');

/**
 * A number as JSON.stringify writes it: NaN (an absent value in the packed
 * series) and ±Infinity as null. A value with at most 15 significant digits
 * from 1e-4 to below 1e15 (a price uploaded with that many digits or fewer,
 * and every value an adjustment rounds to 13) is written from an integer: x is c / 10^k for the integer
 * c = round(|x|·10^k) below 10^15, checked by dividing back (division rounds
 * correctly, as reading the decimal c·10^-k does). No two decimals of at most
 * 15 significant digits read as the same double, so that decimal is the
 * shortest that reads back as x, the one JavaScript writes. Anything else
 * goes through String(x), which took 300 ns a number here.
 */
function putNumber(out: Out, x: number): void {
  if (!Number.isFinite(x)) return out.put(NULL);
  if (x === 0) return out.put(ZERO);
  const a = x < 0 ? -x : x;
  if (a >= 1e-4 && a < 1e15) {
    // k makes |x|·10^k a 15-digit integer: the last number's k, else from the logarithm.
    let k = out.scale;
    let c = Math.round(a * POW10[k]);
    if (!(c >= 1e14 && c < 1e15)) {
      k = 14 - Math.floor(Math.log10(a));
      c = Math.round(a * POW10[k]);
      out.scale = k;
    }
    if (c < 1e15 && c / POW10[k] === a) return putFixed(out, x < 0, c, k);
  }
  const text = String(x);
  out.room(text.length);
  out.at += out.bytes.write(text, out.at, 'latin1');
}

/** The decimal c·10^-k (c an integer below 10^15) with its sign, in JavaScript's plain notation: no trailing zeros, a 0 before a point that would lead. */
function putFixed(out: Out, negative: boolean, c: number, k: number): void {
  // c in two halves that each fit in an int32: a remainder of a double is a
  // call to fmod, of an int32 a multiplication.
  let high = Math.floor(c / 1e8) | 0;
  let low = (c - high * 1e8) | 0;
  while (k > 0) {
    const q = (low / 10) | 0;
    if (low !== q * 10) break;
    const h = (high / 10) | 0;
    low = q + (high - h * 10) * 10_000_000;
    high = h;
    k--;
  }
  let digits = 1;
  for (let t = high > 0 ? high : low; t >= 10; t = (t / 10) | 0) digits++;
  if (high > 0) digits += 8;
  const length = (negative ? 1 : 0) + (digits > k ? digits - k : 1) + (k > 0 ? k + 1 : 0);
  out.room(length);
  const bytes = out.bytes;
  // Right to left: the point once k digits are written, zeros up to the one before it.
  let at = out.at + length;
  let i = 0;
  const lowDigits = high > 0 ? 8 : 1;
  while (i < lowDigits || low > 0) {
    if (i === k && i > 0) bytes[--at] = 0x2e;
    const q = (low / 10) | 0;
    bytes[--at] = 0x30 + low - q * 10;
    low = q;
    i++;
  }
  while (high > 0) {
    if (i === k) bytes[--at] = 0x2e;
    const q = (high / 10) | 0;
    bytes[--at] = 0x30 + high - q * 10;
    high = q;
    i++;
  }
  while (i <= k) {
    if (i === k) bytes[--at] = 0x2e;
    bytes[--at] = 0x30;
    i++;
  }
  // The sign, if any, is the first byte, where the digits ended.
  if (negative) bytes[at - 1] = 0x2d;
  out.at += length;
}

// Each key with what precedes it, in the order of the spec's fields (DAILY_BAR).
const [BAR_DATE, OPEN, HIGH, LOW, CLOSE, VOLUME, CURRENCY, UNIT, STALE, AS_OF, SOURCE] = DAILY_BAR.map(([key], i) => `${i ? ',' : '{'}"${key}":`);

/** `{"barDate":"<date>","openPrice":` for each day seen, as bytes. */
const dayHeads = new Map<number, Buffer>();
function dayHead(day: number): Buffer {
  let head = dayHeads.get(day);
  if (!head) {
    head = Buffer.from(`${BAR_DATE}"${dayToDate(day)}"${OPEN}`);
    // A few centuries of days: bounded, and more than any process reads.
    if (dayHeads.size < 100_000) dayHeads.set(day, head);
  }
  return head;
}

const [HIGH_KEY, LOW_KEY, CLOSE_KEY, VOLUME_KEY] = [HIGH, LOW, CLOSE, VOLUME].map((key) => Buffer.from(key));
const COMMA = Buffer.from(',');

/** A text column's value on bar i: one value for every bar, or one per bar. */
const textAt = (values: string[], i: number) => (values.length === 1 ? values[0] : values[i]);

/** The most a bar's text takes beside its texts: the keys, a date, five numbers of at most 24 characters and an instant. */
const BAR_BYTES = 256;

/**
 * A daily series packed by PostgreSQL (packedBars) as the JSON answer's bars:
 * each bar's object, in date order, joined by commas. What follows the
 * volume (the texts, stale and asOf) is the same for most bars of a series,
 * and is written once for each run of it.
 */
export function dailyBarsJson(instrumentId: string, packed: Buffer): Buffer {
  const piece = pieceOf('daily', instrumentId, [packed], []);
  const [, , days, open, high, low, close, volume, currency, unit, stale, asOf, source] = piece.columns as [
    unknown,
    unknown,
    Int32Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    Float64Array,
    string[],
    string[],
    Uint8Array,
    BigInt64Array,
    string[],
  ];
  const out = new Out(piece.rows * BAR_BYTES);
  let tail = Buffer.alloc(0);
  let tailOf: [string, string, number, bigint, string] | undefined;
  for (let i = 0; i < piece.rows; i++) {
    if (i) out.put(COMMA);
    out.put(dayHead(days[i]));
    putNumber(out, open[i]);
    out.put(HIGH_KEY);
    putNumber(out, high[i]);
    out.put(LOW_KEY);
    putNumber(out, low[i]);
    out.put(CLOSE_KEY);
    putNumber(out, close[i]);
    out.put(VOLUME_KEY);
    putNumber(out, volume[i]);
    const c = textAt(currency, i);
    const u = textAt(unit, i);
    const s = stale[i];
    const ms = asOf[i];
    const src = textAt(source, i);
    if (!tailOf || c !== tailOf[0] || u !== tailOf[1] || s !== tailOf[2] || ms !== tailOf[3] || src !== tailOf[4]) {
      tailOf = [c, u, s, ms, src];
      tail = Buffer.from(
        `${CURRENCY}${JSON.stringify(c)}${UNIT}${JSON.stringify(u)}${STALE}${s ? 'true' : 'false'}${AS_OF}"${new Date(Number(ms)).toISOString()}"${SOURCE}${JSON.stringify(src)}}`,
      );
    }
    out.put(tail);
  }
  return out.bytes.subarray(0, out.at);
}

/**
 * A series of readSeriesText as the answer sends its bars in `format`: the
 * JSON objects joined by commas, written from the packed series
 * (dailyBarsJson); the CSV rows or packed columns as read. A bulk read writes
 * each series' JSON as it sends it, so the pages it holds stay packed.
 */
export function answerBars(format: DailyBarsFormat, series: DailySeriesText): Buffer {
  return format === 'json' ? dailyBarsJson(series.instrumentId, series.bars) : series.bars;
}
