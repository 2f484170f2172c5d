import { describe, expect, it } from 'vitest';
import { adjustSeries, buildFactors, factorsUsed, multiplierSegments, NOT_VENDOR_ADJUSTED, type Factor } from '../../server/price-history/adjustment.ts';
import { dayNumber, dayToDate } from '../../server/core/day-numbers.ts';
import { dateOrder, inOrder, reflectsThrough } from '../../server/prices/packed-columns.ts';

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

interface Bar {
  barDate: string;
  open: number | null;
  close: number;
  volume: number | null;
  reflectsActionsThrough: string | null;
}

/**
 * The definition, bar by bar: the factors effective after the bar's date and
 * not already reflected by its vendor, multiplied in ascending effective
 * date starting from 1; and which factors that touched or found reflected.
 */
function referenceAdjust(factors: Factor[], bars: Bar[]) {
  const applied = new Set<string>();
  const reflected = new Set<string>();
  const out = bars.map((bar) => {
    let price = 1;
    let volume = 1;
    for (const f of factors) {
      if (f.effectiveDate <= bar.barDate) continue;
      if (bar.reflectsActionsThrough !== null && f.effectiveDate <= bar.reflectsActionsThrough) {
        reflected.add(f.actionId);
        continue;
      }
      price *= f.price;
      volume *= f.volume;
      applied.add(f.actionId);
    }
    return { open: bar.open === null ? null : bar.open * price, close: bar.close * price, volume: bar.volume === null ? null : bar.volume * volume };
  });
  return { out, applied, reflected };
}

describe('adjustment: the multiplier segments give what the per-bar definition gives', () => {
  it('when random action sets meet random raw and vendor-adjusted bars, then adjustSeries agrees bit for bit, and factorsUsed names the same actions', () => {
    const rand = prng(20261122);
    let appliedSomewhere = 0;
    let reflectedSomewhere = 0;
    for (let trial = 0; trial < 300; trial++) {
      const start = dayNumber('2000-01-03');
      const bars: Bar[] = [];
      let close = 50 + rand() * 100;
      for (let i = 0; i < 300; i++) {
        close *= 1 + (rand() - 0.5) * 0.04;
        const vendor = rand() < 0.2;
        bars.push({
          barDate: dayToDate(start + i),
          open: rand() < 0.1 ? null : close * (1 + (rand() - 0.5) * 0.01),
          close,
          volume: rand() < 0.1 ? null : Math.round(rand() * 1e6),
          reflectsActionsThrough: vendor ? dayToDate(start + Math.floor(rand() * 400)) : null,
        });
      }
      // Some actions share an effective date: their factors compound in one segment.
      const dates = Array.from({ length: 4 }, () => dayToDate(start + Math.floor(rand() * 320)));
      const actions = Array.from({ length: Math.floor(rand() * 8) }, (_, k) => {
        const effectiveDate = dates[Math.floor(rand() * dates.length)];
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
      const reference = referenceAdjust(factors, bars);

      const days = Int32Array.from(bars, (b) => dayNumber(b.barDate));
      const reflects = Int32Array.from(bars, (b) => (b.reflectsActionsThrough === null ? NOT_VENDOR_ADJUSTED : dayNumber(b.reflectsActionsThrough)));
      const open = Float64Array.from(bars, (b) => b.open ?? NaN);
      const closes = Float64Array.from(bars, (b) => b.close);
      const volume = Float64Array.from(bars, (b) => b.volume ?? NaN);
      adjustSeries(factors, days, reflects, [open, closes], volume);
      // toEqual compares numbers with Object.is: bit-identical (NaN for an absent value on both sides).
      expect([...open]).toEqual(reference.out.map((b) => b.open ?? NaN));
      expect([...closes]).toEqual(reference.out.map((b) => b.close));
      expect([...volume]).toEqual(reference.out.map((b) => b.volume ?? NaN));

      // What a read's statement reports of these bars (daily-text-repository.ts): the earliest key, and the first bar of each reflects-through date.
      const firstOf = new Map<string, string>();
      for (const b of bars) if (b.reflectsActionsThrough !== null && !firstOf.has(b.reflectsActionsThrough)) firstOf.set(b.reflectsActionsThrough, b.barDate);
      const used = factorsUsed(factors, {
        minKey: bars.map((b) => (b.reflectsActionsThrough !== null && b.reflectsActionsThrough > b.barDate ? b.reflectsActionsThrough : b.barDate)).sort()[0],
        vendorSpans: [...firstOf].map(([reflectsThrough, firstBar]) => ({ reflectsThrough, firstBar })),
      });
      expect(used.applied.map((f) => f.actionId).sort()).toEqual([...reference.applied].sort());
      expect(used.alreadyReflected.map((f) => f.actionId).sort()).toEqual([...reference.reflected].sort());
      if (reference.applied.size) appliedSomewhere++;
      if (reference.reflected.size) reflectedSomewhere++;
    }
    expect(appliedSomewhere).toBeGreaterThan(150);
    expect(reflectedSomewhere).toBeGreaterThan(50);
  });

  it('when two actions share an effective date, then one segment carries both factors, and keys on or after the last date are not adjusted', () => {
    const { factors } = buildFactors(
      [
        { id: 'a', kind: 'split', effectiveDate: '2020-03-04', knowledgeProvenance: 'announced', params: { ratio: 2 } },
        { id: 'b', kind: 'split', effectiveDate: '2020-03-04', knowledgeProvenance: 'announced', params: { ratio: 5 } },
        { id: 'c', kind: 'split', effectiveDate: '2020-06-01', knowledgeProvenance: 'announced', params: { ratio: 4 } },
      ],
      [],
    );
    expect(multiplierSegments(factors)).toEqual([
      { from: null, until: '2020-03-04', price: 0.025, volume: 40 },
      { from: '2020-03-04', until: '2020-06-01', price: 0.25, volume: 4 },
    ]);
  });

  it('when a 2-for-1 split is effective on D, then the series path halves prices and doubles volume strictly before D only', () => {
    const { factors } = buildFactors([{ id: 's', kind: 'split', effectiveDate: '2020-03-04', knowledgeProvenance: 'announced', params: { ratio: 2 } }], []);
    const days = Int32Array.from(['2020-03-03', '2020-03-04'], dayNumber);
    const close = Float64Array.from([100, 52]);
    const volume = Float64Array.from([10, 20]);
    adjustSeries(factors, days, Int32Array.from([NOT_VENDOR_ADJUSTED, NOT_VENDOR_ADJUSTED]), [close], volume);
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

  it('when the days are sparse, repeat, or are instants, then they are put in ascending order all the same', () => {
    const sparse = Int32Array.of(100_000, 5, 70_000, 300);
    expect([...inOrder(sparse, dateOrder(sparse))]).toEqual([5, 300, 70_000, 100_000]);
    const repeated = Int32Array.of(3, 1, 3, 2, 0);
    expect([...inOrder(repeated, dateOrder(repeated))]).toEqual([0, 1, 2, 3, 3]);
    const negative = Int32Array.of(-3, -10, 4, -4);
    expect([...inOrder(negative, dateOrder(negative))]).toEqual([-10, -4, -3, 4]);
    const instants = BigInt64Array.of(1_600_000_120_000n, 1_600_000_000_000n, 1_600_000_060_000n);
    expect([...inOrder(instants, dateOrder(instants))]).toEqual([1_600_000_000_000n, 1_600_000_060_000n, 1_600_000_120_000n]);
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
