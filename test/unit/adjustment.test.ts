import { describe, expect, it } from 'vitest';
import { BarAdjuster, buildFactors, dayNumber, dayToDate, NOT_VENDOR_ADJUSTED, type RawBar } from '../../server/prices/adjustment.ts';
import { dateOrder, inOrder, reflectsThrough } from '../../server/prices/adjusted-series.ts';

const DAY_MS = 86_400_000;

// A deterministic generator, so a failure reproduces.
function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s * 1_664_525 + 1_013_904_223) >>> 0;
    return s / 2 ** 32;
  };
}

describe('day numbers', () => {
  it('when a date is turned into a day number by arithmetic, then it equals Date.parse / 86,400,000 over four centuries', () => {
    const mismatches: string[] = [];
    let checked = 0;
    for (let t = Date.parse('1800-01-01T00:00:00Z'); t <= Date.parse('2200-12-31T00:00:00Z'); t += DAY_MS) {
      const date = new Date(t).toISOString().slice(0, 10);
      if (dayNumber(date) !== t / DAY_MS || dayToDate(t / DAY_MS) !== date) mismatches.push(date);
      checked++;
    }
    expect(checked).toBe(146_462);
    expect(mismatches).toEqual([]);
  });
});

describe('BarAdjuster: one bar at a time and a whole series give identical numbers', () => {
  it('when random action sets meet random raw and vendor-adjusted bars, then adjust() and adjustSeries() agree bit for bit, and on what they applied', () => {
    const rand = prng(20261122);
    let appliedSomewhere = 0;
    for (let trial = 0; trial < 200; trial++) {
      const start = dayNumber('2000-01-03');
      const bars: RawBar[] = [];
      let close = 50 + rand() * 100;
      for (let i = 0; i < 300; i++) {
        close *= 1 + (rand() - 0.5) * 0.04;
        const vendor = rand() < 0.2;
        bars.push({
          barDate: dayToDate(start + i),
          openPrice: rand() < 0.1 ? null : close * (1 + (rand() - 0.5) * 0.01),
          highPrice: close * 1.01,
          lowPrice: rand() < 0.1 ? null : close * 0.99,
          closePrice: close,
          volume: rand() < 0.1 ? null : Math.round(rand() * 1e6),
          priceBasis: vendor ? 'vendor_adjusted' : 'raw',
          reflectsActionsThrough: vendor ? dayToDate(start + Math.floor(rand() * 400)) : null,
        });
      }
      const actions = Array.from({ length: Math.floor(rand() * 6) }, (_, k) => {
        const effectiveDate = dayToDate(start + Math.floor(rand() * 320));
        return rand() < 0.5
          ? { id: `a${k}`, kind: 'split', effectiveDate, knowledgeProvenance: 'announced' as const, params: { ratio: [2, 3, 0.1, 1.5][k % 4] } }
          : { id: `a${k}`, kind: 'cash_dividend', effectiveDate, knowledgeProvenance: 'observed' as const, params: { amount: rand() } };
      });
      const priorCloses = actions.map((a) => ({
        effectiveDate: a.effectiveDate,
        barDate: dayToDate(dayNumber(a.effectiveDate) - 1),
        close: 40 + rand() * 20,
        quoteCurrency: 'USD',
      }));
      const { factors } = buildFactors(actions, priorCloses);

      const one = new BarAdjuster(factors);
      const adjusted = bars.map((b) => one.adjust(b));

      const many = new BarAdjuster(factors);
      const days = Int32Array.from(bars, (b) => dayNumber(b.barDate));
      const reflects = Int32Array.from(bars, (b) => (b.reflectsActionsThrough === null ? NOT_VENDOR_ADJUSTED : dayNumber(b.reflectsActionsThrough)));
      const col = (f: (b: RawBar) => number | null) => Float64Array.from(bars, (b) => f(b) ?? NaN);
      const [open, high, low, closes, volume] = [
        col((b) => b.openPrice),
        col((b) => b.highPrice),
        col((b) => b.lowPrice),
        col((b) => b.closePrice),
        col((b) => b.volume),
      ];
      many.adjustSeries(days, reflects, [open, high, low, closes], volume);

      // toEqual compares numbers with Object.is: bit-identical (NaN for an absent value on both sides).
      expect([...open]).toEqual(adjusted.map((b) => b.openPrice ?? NaN));
      expect([...high]).toEqual(adjusted.map((b) => b.highPrice ?? NaN));
      expect([...low]).toEqual(adjusted.map((b) => b.lowPrice ?? NaN));
      expect([...closes]).toEqual(adjusted.map((b) => b.closePrice));
      expect([...volume]).toEqual(adjusted.map((b) => b.volume ?? NaN));
      if (one.applied.size) appliedSomewhere++;
      expect([...many.applied].sort()).toEqual([...one.applied].sort());
      expect([...many.alreadyReflected].sort()).toEqual([...one.alreadyReflected].sort());
      expect([...many.bases].sort()).toEqual([...one.bases].sort());
      expect(many.provenanceCounts()).toEqual(one.provenanceCounts());
    }
    expect(appliedSomewhere).toBeGreaterThan(100);
  });

  it('when a 2-for-1 split is effective on D, then the series path halves prices and doubles volume strictly before D only', () => {
    const { factors } = buildFactors([{ id: 's', kind: 'split', effectiveDate: '2020-03-04', knowledgeProvenance: 'announced', params: { ratio: 2 } }], []);
    const days = Int32Array.from(['2020-03-03', '2020-03-04'], dayNumber);
    const close = Float64Array.from([100, 52]);
    const volume = Float64Array.from([10, 20]);
    new BarAdjuster(factors).adjustSeries(days, Int32Array.from([NOT_VENDOR_ADJUSTED, NOT_VENDOR_ADJUSTED]), [close], volume);
    expect([...close]).toEqual([50, 52]);
    expect([...volume]).toEqual([20, 20]);
  });
});

describe('dateOrder and inOrder: packed columns put in date order', () => {
  it('when days arrive shuffled, then every column is rearranged by the same permutation into ascending days; when already ascending, then nothing is copied', () => {
    const rand = prng(7);
    const days = Int32Array.from({ length: 500 }, (_, i) => 10_000 + i * 2);
    const closes = Float64Array.from(days, (d) => d / 7);
    // Fisher–Yates shuffle of the rows, keeping each day with its close.
    const shuffledDays = Int32Array.from(days);
    const shuffledCloses = Float64Array.from(closes);
    for (let i = days.length - 1; i > 0; i--) {
      const j = Math.floor(rand() * (i + 1));
      [shuffledDays[i], shuffledDays[j]] = [shuffledDays[j], shuffledDays[i]];
      [shuffledCloses[i], shuffledCloses[j]] = [shuffledCloses[j], shuffledCloses[i]];
    }
    const order = dateOrder(shuffledDays);
    expect(order).not.toBeNull();
    expect(inOrder(shuffledDays, order)).toEqual(days);
    expect(inOrder(shuffledCloses, order)).toEqual(closes);
    expect(dateOrder(days)).toBeNull();
    expect(inOrder(closes, null)).toBe(closes);
    expect(dateOrder(new Int32Array(0))).toBeNull();
  });
});

describe('reflectsThrough: the vendor-adjusted bars of a packed read', () => {
  const days = Int32Array.from({ length: 300 }, (_, i) => 14_000 + i + Math.floor(i / 5) * 2);
  const raw = () => new Int32Array(0);

  it('when some bars are vendor-adjusted, then each value lands on its own day, in whatever order the pairs arrive, and every other bar is raw', () => {
    const vendorDays = [days[0], days[17], days[150], days[299]].reverse();
    const out = reflectsThrough(
      days,
      null,
      Int32Array.from(vendorDays, (d) => d + 30),
      Int32Array.from(vendorDays),
    );
    for (let i = 0; i < days.length; i++) expect(out[i]).toBe(vendorDays.includes(days[i]) ? days[i] + 30 : NOT_VENDOR_ADJUSTED);
  });

  it('when every bar is vendor-adjusted, then the values run beside the unsorted days and are put in order with them', () => {
    const shuffled = Int32Array.from(days).reverse();
    const reflects = Int32Array.from(shuffled, (d) => d - 7);
    const out = reflectsThrough(days, dateOrder(shuffled), reflects, raw());
    expect([...out]).toEqual([...days].map((d) => d - 7));
  });

  it('when every bar is raw, then all are NOT_VENDOR_ADJUSTED; inconsistent columns or a day outside the series are refused', () => {
    expect([...reflectsThrough(days, null, raw(), raw())].every((r) => r === NOT_VENDOR_ADJUSTED)).toBe(true);
    expect(() => reflectsThrough(days, null, Int32Array.from([1, 2]), Int32Array.from([days[3]]))).toThrow(/2 reflects-through values for 1 days/);
    expect(() => reflectsThrough(days, null, Int32Array.from([0]), Int32Array.from([days[4] + 1]))).toThrow(/not among/);
  });
});
