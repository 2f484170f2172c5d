import { describe, expect, it } from 'vitest';
import { adjustedValue, adjustPackedBars } from '../../server/prices/adjusted-values.ts';
import { roundSignificant } from '../../server/core/significant.ts';
import { dayNumber } from '../../server/core/day-numbers.ts';
import { PACKED_BAR_BYTES } from '../../server/prices/packed-columns.ts';
import type { MultiplierSegment } from '../../server/price-history/adjustment.ts';
import { productsToRound } from '../support/rounding-cases.ts';

// The service's adjustment of packed series against the documented rule
// (docs/api.md, "Adjusted prices"): the product rounded to 13 significant
// digits, half away from zero, by roundSignificant, which works on the
// shortest decimal's digits as text; a multiplier of exactly 1 leaves the
// value as stored. The SQL twin is held to the same rule, and to this
// function, by test/integration/price-text.test.ts, on the same kinds of
// products (test/support/rounding-cases.ts).

const byRule = (value: number, multiplier: number) => (multiplier === 1 ? value : roundSignificant(value * multiplier));

/** The same fast path with no fallback near a half: what the 0.01 guard protects against. */
function unguarded(value: number, multiplier: number): number {
  const x = value * multiplier;
  const a = Math.abs(x);
  if (multiplier === 1 || a < 1e-10 || a >= 1e13 || a === 0) return byRule(value, multiplier);
  const scale = 10 ** (12 - Math.floor(Math.log10(a)));
  return (Math.sign(x) * Math.floor(a * scale + 0.5)) / scale;
}

describe('adjusted values', () => {
  it('when products land on, near and far from a half in the 14th digit, at every scale and beyond the double range, then each is the rule’s value, bit for bit', () => {
    const pairs = productsToRound(2024);
    const mismatches = pairs.filter(([v, m]) => !Object.is(adjustedValue(v, m), byRule(v, m)));
    expect(mismatches.slice(0, 10)).toEqual([]);
    // Not vacuous: most products needed rounding, and the guard near a half changed some answers.
    expect(pairs.filter(([v, m]) => m !== 1 && byRule(v, m) !== v * m).length).toBeGreaterThan(10_000);
    expect(pairs.filter(([v, m]) => !Object.is(unguarded(v, m), byRule(v, m))).length).toBeGreaterThan(0);
    expect(adjustedValue(290.035, 0.05)).toBe(14.50175);
    expect(adjustedValue(1e300, 1e300)).toBe(Infinity);
    expect(Object.is(adjustedValue(-1e-300, 1e-300), -0)).toBe(true);
  });

  it('when a packed series meets its segments, then each bar takes its segment’s multipliers by its key, absent values stay absent and bars past the last segment stay as stored', () => {
    const segments: MultiplierSegment[] = [
      { from: null, until: '2024-03-01', price: 0.5 * 0.98, volume: 2 },
      { from: '2024-03-01', until: '2024-06-03', price: 0.5, volume: 2 },
    ];
    const bars = [
      { date: '2024-02-28', values: [10.01, 10.5, 9.99, 10.2, 1_000_001] },
      { date: '2024-02-29', values: [NaN, NaN, NaN, 10.4, NaN] },
      // Vendor-adjusted through 2024-03-04: its key falls in the second segment.
      { date: '2024-02-27', values: [3.33, 3.5, 3.1, 3.2, 999] },
      { date: '2024-05-31', values: [20.03, 20.5, 19.99, 20.1, 500] },
      { date: '2024-06-03', values: [30.07, 30.5, 29.97, 30.1, 700] },
    ];
    const packed = Buffer.alloc(4 + bars.length * PACKED_BAR_BYTES);
    packed.writeInt32BE(bars.length, 0);
    bars.forEach((bar, i) => {
      const at = 4 + i * PACKED_BAR_BYTES;
      packed.writeInt32BE(dayNumber(bar.date), at);
      bar.values.forEach((v, c) => packed.writeDoubleBE(v, at + 4 + c * 8));
      packed.writeBigInt64BE(123n, at + 44);
      packed[at + 52] = 1;
    });
    const before = Buffer.from(packed);
    adjustPackedBars(packed, segments, new Map([[dayNumber('2024-02-27'), dayNumber('2024-03-04')]]));
    const read = (i: number) => Array.from({ length: 5 }, (_, c) => packed.readDoubleBE(4 + i * PACKED_BAR_BYTES + 4 + c * 8));
    const expected = (values: number[], price: number, volume: number) => values.map((v, c) => (Number.isNaN(v) ? NaN : byRule(v, c === 4 ? volume : price)));
    expect(read(0)).toEqual(expected(bars[0].values, 0.49, 2));
    expect(read(0)[0]).toBe(4.9049);
    expect(read(1)).toEqual([NaN, NaN, NaN, 5.096, NaN]);
    expect(read(2)).toEqual(expected(bars[2].values, 0.5, 2));
    expect(read(3)).toEqual(expected(bars[3].values, 0.5, 2));
    expect(read(4)).toEqual(bars[4].values);
    // Only the five numbers change: days, instants and stale flags are as they were.
    for (let i = 0; i < bars.length; i++) {
      const at = 4 + i * PACKED_BAR_BYTES;
      expect(packed.subarray(at, at + 4)).toEqual(before.subarray(at, at + 4));
      expect(packed.subarray(at + 44, at + PACKED_BAR_BYTES)).toEqual(before.subarray(at + 44, at + PACKED_BAR_BYTES));
    }
  });
});
