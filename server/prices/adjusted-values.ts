import { roundSignificant, SIGNIFICANT_DIGITS } from '../core/significant.ts';
import { segmentEnds, segmentOf, type MultiplierSegment } from '../price-history/adjustment.ts';
import { PACKED_BAR_BYTES } from './packed-columns.ts';

// A packed daily series (daily-text-repository.ts, packedBars) adjusted in
// the service, the JavaScript twin of adjusted-values-sql.ts: the same
// product, the same rounding, bit for bit. PostgreSQL evaluating the
// rounding's expressions per value, with the segment join, was half of a bulk
// page statement's time (a page of 27 instruments' adjusted year: 26 ms, 13
// without them); here a year's series takes 0.035 ms of the request thread.

/** 10^k for k = 0…22, each an exact double (10^23 is not). */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, k) => Number(`1e${k}`));
/** The doubles nearest 10^k for k = -10…12, at [k + 10]: the bounds of floorLog10's range. */
const DECADES = Array.from({ length: 23 }, (_, k) => Number(`1e${k - 10}`));

const within = (x: number) => {
  const a = Math.abs(x);
  return a >= 1e-150 && a <= 1e150;
};

/**
 * `value` times `multiplier`, rounded as the price routes print an adjusted
 * value (core/significant.ts), by the steps of adjusted, roundingScale and
 * roundedValue (adjusted-values-sql.ts): a multiplier of exactly 1 leaves the
 * value as stored; a product within 1e-10..1e13 is rounded at its 13th
 * significant digit by a power of ten, unless it lies within 0.01 of a half
 * there, when roundSignificant, the exact rule, decides, as it does for every
 * other product. JavaScript's product is IEEE 754's, as ieee_product makes
 * PostgreSQL's where it would overflow or underflow.
 */
export function adjustedValue(value: number, multiplier: number): number {
  const x = value * multiplier;
  if (multiplier === 1) return x;
  const a = Math.abs(x);
  if (within(value) && within(multiplier) && a >= 1e-10 && a < 1e13) {
    const scale = POWERS_OF_TEN[SIGNIFICANT_DIGITS - 1 - floorLog10(a)];
    const scaled = a * scale;
    if (Math.abs(scaled - Math.floor(scaled) - 0.5) >= 0.01) return (Math.sign(x) * Math.floor(scaled + 0.5)) / scale;
  }
  return roundSignificant(x);
}

/**
 * ⌊log10 a⌋ for 1e-10 ≤ a < 1e13, exact: Math.log10's result is moved to the
 * power of ten at or below `a`. PostgreSQL's log() can be an ulp off beside a
 * power of ten, where both roundings give that power of ten.
 */
function floorLog10(a: number): number {
  let e = Math.min(12, Math.max(-10, Math.floor(Math.log10(a))));
  while (e > -10 && DECADES[e + 10] > a) e--;
  while (e < 12 && DECADES[e + 11] <= a) e++;
  return e;
}

/**
 * Adjusts a packed daily series in place with the instrument's multiplier
 * segments: each bar's prices by its segment's price multiplier and its
 * volume by the volume multiplier, absent values (NaN) left absent. A bar's
 * key is its date, or its reflects-through date where that is later
 * (`vendorKeys`, by day number); a key past the last segment is left as
 * stored, as the SQL's left join leaves it.
 */
export function adjustPackedBars(packed: Buffer, segments: MultiplierSegment[], vendorKeys: Map<number, number>): void {
  const until = segmentEnds(segments);
  const view = new DataView(packed.buffer, packed.byteOffset, packed.byteLength);
  const n = view.getInt32(0);
  for (let i = 0, at = 4; i < n; i++, at += PACKED_BAR_BYTES) {
    const day = view.getInt32(at);
    const s = segmentOf(until, vendorKeys.get(day) ?? day);
    if (s < 0) continue;
    const { price, volume } = segments[s];
    for (let c = 0; c < 5; c++) {
      const offset = at + 4 + c * 8;
      const v = view.getFloat64(offset);
      if (!Number.isNaN(v)) view.setFloat64(offset, adjustedValue(v, c === 4 ? volume : price));
    }
  }
}
