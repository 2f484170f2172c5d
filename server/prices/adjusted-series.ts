import os from 'node:os';
import { timed, type Sql } from '../db/sql.ts';
import type { PointInTime } from '../http/params.ts';
import { BarAdjuster, dayToDate, NOT_VENDOR_ADJUSTED } from './adjustment.ts';
import * as repo from './repository.ts';
import { planAdjustments } from './service.ts';

// The analytics read of daily bars: adjusted series as typed arrays for the
// worker pool, from one packed row per instrument (repository.ts,
// selectPackedSeries), adjusted with the same plan as the price routes.

export interface AdjustedSeries {
  /** Days since 1970-01-01 (UTC), ascending. */
  dates: Int32Array;
  open: Float64Array;
  high: Float64Array;
  low: Float64Array;
  close: Float64Array;
  /** NaN where the source published no value. */
  volume: Float64Array;
  actionSetVersion: number;
  firstDate: string | null;
  lastDate: string | null;
}

/**
 * Adjusted daily bars packed as typed arrays for the worker pool: compact,
 * and transferable without copying. Missing fields become NaN there, and the
 * workers treat NaN as absent (never as zero). Only actions known at the
 * cut-off apply; backfilled actions are left out, so figures are point-in-time.
 */
export async function readAdjustedSeries(
  sql: Sql,
  ids: string[],
  window: { from: string; to: string; asOf?: PointInTime; fields: 'close' | 'ohlcv' },
): Promise<Map<string, AdjustedSeries>> {
  const q = { from: window.from, to: window.to, adjusted: true, asOf: window.asOf, includeBackfilled: false };
  const [plans, rows] = await Promise.all([planAdjustments(sql, ids, q), timed('adjusted_series_bars', repo.selectPackedSeries(sql, ids, window.from, window.to, window.fields))]);
  const packed = new Map(rows.map((r) => [r.instrument_id, r]));
  const out = new Map<string, AdjustedSeries>();
  const ohlcv = window.fields === 'ohlcv';
  for (const id of ids) {
    const r = packed.get(id);
    const days = int32s(r?.days);
    const order = dateOrder(days);
    const column = (base64: string | null | undefined) => inOrder(float64s(base64), order);
    const dates = inOrder(days, order);
    const close = column(r?.close_price);
    const s: AdjustedSeries = {
      dates,
      open: ohlcv ? column(r?.open_price) : new Float64Array(0),
      high: ohlcv ? column(r?.high_price) : new Float64Array(0),
      low: ohlcv ? column(r?.low_price) : new Float64Array(0),
      close,
      volume: ohlcv ? column(r?.volume) : new Float64Array(0),
      actionSetVersion: plans.get(id)!.version,
      firstDate: dates.length ? dayToDate(dates[0]) : null,
      lastDate: dates.length ? dayToDate(dates[dates.length - 1]) : null,
    };
    const reflects = reflectsThrough(dates, order, int32s(r?.reflects), int32s(r?.reflects_days));
    new BarAdjuster(plans.get(id)!.factors).adjustSeries(dates, reflects, ohlcv ? [s.open, s.high, s.low, close] : [close], ohlcv ? s.volume : null);
    out.set(id, s);
  }
  return out;
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
 * The permutation that puts `days` in ascending order, or null when they
 * already are (the usual case: the rows arrive in index order, but SQL
 * promises no order without ORDER BY).
 */
export function dateOrder(days: Int32Array): Uint32Array | null {
  let sorted = true;
  for (let i = 1; i < days.length && sorted; i++) sorted = days[i - 1] < days[i];
  if (sorted) return null;
  return Uint32Array.from(days.keys()).sort((a, b) => days[a] - days[b]);
}

/** `values` rearranged by `order` (from dateOrder), or as they are when order is null. */
export function inOrder<T extends Int32Array | Float64Array>(values: T, order: Uint32Array | null): T {
  if (!order) return values;
  const out = new (values.constructor as new (n: number) => T)(values.length);
  for (let i = 0; i < order.length; i++) out[i] = values[order[i]];
  return out;
}

const LITTLE_ENDIAN = os.endianness() === 'LE';

/** Big-endian values packed by PostgreSQL (int4send, float8send) and sent as base64, decoded into a `Type` and byte-swapped natively. */
function fromBigEndian<T extends Int32Array | Float64Array>(base64: string | null | undefined, Type: { new (n: number): T; BYTES_PER_ELEMENT: number }): T {
  const packed = base64 ? Buffer.from(base64, 'base64') : null;
  const out = new Type((packed?.length ?? 0) / Type.BYTES_PER_ELEMENT);
  const bytes = Buffer.from(out.buffer);
  if (packed) bytes.set(packed);
  if (LITTLE_ENDIAN) Type.BYTES_PER_ELEMENT === 8 ? bytes.swap64() : bytes.swap32();
  return out;
}

const int32s = (base64: string | null | undefined) => fromBigEndian(base64, Int32Array);
const float64s = (base64: string | null | undefined) => fromBigEndian(base64, Float64Array);

