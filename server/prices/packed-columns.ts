import os from 'node:os';
import { NOT_VENDOR_ADJUSTED } from '../price-history/adjustment.ts';

// Columns of a daily series as typed arrays: decoding the big-endian values
// PostgreSQL packs (daily-bars-repository.ts, selectPackedSeries), and putting
// columns that arrive unordered in date order.

/**
 * A daily series as columns, one typed array per field, the i-th value of
 * each belonging to the i-th bar: compact, and transferable to the worker
 * pool without copying. A field the read did not ask for is empty; a value
 * the source did not publish is NaN, which every consumer treats as absent
 * (never as zero).
 */
export interface DailyColumns {
  /** Days since 1970-01-01 (UTC), ascending. */
  dates: Int32Array;
  open: Float64Array;
  high: Float64Array;
  low: Float64Array;
  close: Float64Array;
  volume: Float64Array;
}

/**
 * Each bar's reflects-through day (NOT_VENDOR_ADJUSTED for a raw bar), for
 * `days` in ascending order (one bar per day), from a packed read's columns
 * (see selectPackedSeries): `reflects` empty when every bar is raw; beside
 * the unsorted days, put in order by `order`, when every bar is
 * vendor-adjusted; otherwise one value per day of `reflectsDays`.
 */
export function reflectsThrough(days: Int32Array, order: Uint32Array | null, reflects: Int32Array, reflectsDays: Int32Array): Int32Array {
  if (reflects.length === days.length && reflectsDays.length === 0) return inOrder(reflects, order);
  if (reflectsDays.length !== reflects.length) throw new Error(`${reflects.length} reflects-through values for ${reflectsDays.length} days`);
  const out = new Int32Array(days.length).fill(NOT_VENDOR_ADJUSTED);
  for (let k = 0; k < reflects.length; k++) {
    let lo = 0;
    let hi = days.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (days[mid] < reflectsDays[k]) lo = mid + 1;
      else hi = mid;
    }
    if (days[lo] !== reflectsDays[k]) throw new Error(`vendor-adjusted bar on day ${reflectsDays[k]} is not among the series' days`);
    out[lo] = reflects[k];
  }
  return out;
}

/**
 * The permutation that puts `days` (or instants) in ascending order, or null
 * when they already are (the usual case: the rows arrive in index order, but
 * SQL promises no order without ORDER BY).
 */
export function dateOrder(days: Int32Array | BigInt64Array): Uint32Array | null {
  let sorted = true;
  for (let i = 1; i < days.length && sorted; i++) sorted = days[i - 1] < days[i];
  if (sorted) return null;
  return (days instanceof Int32Array && placedDays(days)) || Uint32Array.from(days.keys()).sort((a, b) => (days[a] < days[b] ? -1 : days[a] > days[b] ? 1 : 0));
}

/**
 * The ascending order of distinct `days`, each placed at its offset from the
 * first, in two passes. A bulk page's rows come grouped by instrument, their
 * days in no order when the window spans two of the hypertable's chunks, so
 * nearly every series is put in order: unpacking 500 such series of a year's
 * 261 bars (bar-columns.ts) took 14 ms this way and 73 ms by a comparison
 * sort (medians of 35 interleaved rounds). Null when a day repeats or the
 * days are sparse (more than 8 days apart on average), for the sort.
 */
function placedDays(days: Int32Array): Uint32Array | null {
  let first = days[0];
  let last = days[0];
  for (let i = 1; i < days.length; i++) {
    if (days[i] < first) first = days[i];
    else if (days[i] > last) last = days[i];
  }
  const span = last - first + 1;
  if (span > 8 * days.length) return null;
  const slots = new Int32Array(span).fill(-1);
  for (let i = 0; i < days.length; i++) {
    if (slots[days[i] - first] !== -1) return null;
    slots[days[i] - first] = i;
  }
  const order = new Uint32Array(days.length);
  for (let s = 0, k = 0; s < span; s++) if (slots[s] !== -1) order[k++] = slots[s];
  return order;
}

/** `values` rearranged by `order` (from dateOrder), or as they are when order is null. */
export function inOrder<T extends Int32Array | Float64Array | BigInt64Array>(values: T, order: Uint32Array | null): T {
  if (!order) return values;
  const out = new (values.constructor as new (n: number) => T)(values.length);
  for (let i = 0; i < order.length; i++) out[i] = values[order[i]];
  return out;
}

/** The bytes of one packed bar (daily-text-repository.ts, packedBars): day, five doubles, asOf, stale. */
export const PACKED_BAR_BYTES = 4 + 5 * 8 + 8 + 1;

const LITTLE_ENDIAN = os.endianness() === 'LE';

/** Big-endian values packed by PostgreSQL (int4send, float8send) and sent as base64, decoded into a `Type` and byte-swapped natively. */
function fromBigEndian<T extends Int32Array | Float64Array>(base64: string | null | undefined, Type: { new (n: number): T; BYTES_PER_ELEMENT: number }): T {
  const packed = base64 ? Buffer.from(base64, 'base64') : null;
  const out = new Type((packed?.length ?? 0) / Type.BYTES_PER_ELEMENT);
  const bytes = Buffer.from(out.buffer);
  if (packed) bytes.set(packed);
  if (LITTLE_ENDIAN && Type.BYTES_PER_ELEMENT === 8) bytes.swap64();
  else if (LITTLE_ENDIAN) bytes.swap32();
  return out;
}

export const int32s = (base64: string | null | undefined) => fromBigEndian(base64, Int32Array);
export const float64s = (base64: string | null | undefined) => fromBigEndian(base64, Float64Array);
