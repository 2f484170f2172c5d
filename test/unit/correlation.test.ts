// Correlations against simple-statistics (sampleCorrelation,
// sampleRankCorrelation) and hand-computed cases, on returns aligned
// INDEPENDENTLY in this file (a Map keyed by date), plus the real Dow 30
// adjusted closes 1990-2001.
import { readFileSync } from 'node:fs';
import { sampleCorrelation, sampleRankCorrelation } from 'simple-statistics';
import { describe, expect, it } from 'vitest';
import { alignOnCommonDates, averageRanks, correlationMatrix, logReturns, pearson, spearman } from '../../workers/correlation.ts';
import { CORRELATION_MIN_OBSERVATIONS, type DatedCloses } from '../../workers/contract.ts';

const day = (iso: string) => Date.UTC(Number(iso.slice(0, 4)), Number(iso.slice(5, 7)) - 1, Number(iso.slice(8, 10))) / 86_400_000;
const series = (dates: number[], close: number[]): DatedCloses => ({ dates: Int32Array.from(dates), close: Float64Array.from(close) });

function loadDow(): { names: string[]; series: DatedCloses[] } {
  const lines = readFileSync(new URL('../../server/demo/data/dowjones30_adjclose_1990_2001.csv', import.meta.url), 'utf8')
    .trim()
    .split('\n');
  const names = lines[0].split(',').slice(1);
  const rows = lines.slice(1).map((l) => l.split(','));
  const dates = rows.map((r) => day(r[0]));
  return {
    names,
    series: names.map((_, k) =>
      series(
        dates,
        rows.map((r) => Number(r[k + 1])),
      ),
    ),
  };
}

/** Independent reference: intersect by Map, then log returns between consecutive common dates. */
function referenceReturns(all: DatedCloses[]): number[][] {
  const maps = all.map((s) => {
    const m = new Map<number, number>();
    s.dates.forEach((d, i) => {
      if (Number.isFinite(s.close[i]) && s.close[i] > 0) m.set(d, s.close[i]);
    });
    return m;
  });
  const common = [...maps[0].keys()].filter((d) => maps.every((m) => m.has(d))).sort((a, b) => a - b);
  return maps.map((m) => common.slice(1).map((d, i) => Math.log(m.get(d)! / m.get(common[i])!)));
}

describe('alignment and returns', () => {
  it('keeps only dates every series has, with a usable close', () => {
    const a = series([1, 2, 3, 5, 7], [10, 11, 12, 13, 14]);
    const b = series([2, 3, 4, 5, 7], [20, 21, 22, 23, NaN]);
    const c = series([0, 2, 3, 5, 6, 7], [30, 31, 32, 33, 34, 35]);
    const r = alignOnCommonDates([a, b, c]);
    expect(Array.from(r.dates)).toEqual([2, 3, 5]);
    expect(r.closes.map((x) => Array.from(x))).toEqual([
      [11, 12, 13],
      [20, 21, 23],
      [31, 32, 33],
    ]);
  });

  it('a non-positive close is a missing date, not a value', () => {
    const r = alignOnCommonDates([series([1, 2, 3], [1, 0, 2]), series([1, 2, 3], [5, 6, 7])]);
    expect(Array.from(r.dates)).toEqual([1, 3]);
  });

  it('rejects unsorted dates and mismatched lengths', () => {
    expect(() => alignOnCommonDates([series([2, 1], [1, 1])])).toThrow(RangeError);
    expect(() => alignOnCommonDates([{ dates: Int32Array.from([1, 2]), close: Float64Array.from([1]) }])).toThrow(TypeError);
  });

  it('log returns between consecutive common dates (aligned first, then differenced)', () => {
    expect(Array.from(logReturns([100, 110, 99]))).toEqual([Math.log(1.1), Math.log(99 / 110)]);
    expect(logReturns([5]).length).toBe(0);
    // b lacks date 2, so the aligned return for a spans 1 → 3
    const m = correlationMatrix([series([1, 2, 3, 4, 5], [1, 2, 4, 3, 5]), series([1, 3, 4, 5], [1, 2, 1, 3])]);
    expect(m.alignedObservations).toBe(3);
    const ref = referenceReturns([series([1, 2, 3, 4, 5], [1, 2, 4, 3, 5]), series([1, 3, 4, 5], [1, 2, 1, 3])]);
    expect(ref[0][0]).toBeCloseTo(Math.log(4), 15);
    expect(m.pairs[0].correlation).toBeCloseTo(sampleCorrelation(ref[0], ref[1]), 12);
  });
});

describe('pearson and spearman', () => {
  it('average ranks for ties (hand-computed)', () => {
    expect(Array.from(averageRanks([10, 20, 20, 20, 5]))).toEqual([2, 4, 4, 4, 1]);
    expect(Array.from(averageRanks([3, 1, 3, 2]))).toEqual([3.5, 1, 3.5, 2]);
  });

  it('spearman with a tie, by hand: x = [1,2,2,3], y = [1,3,2,4] → 3/√10', () => {
    // ranks x = [1, 2.5, 2.5, 4], y = [1, 3, 2, 4]; Σdxdy = 4.5, Σdx² = 4.5, Σdy² = 5
    expect(spearman([1, 2, 2, 3], [1, 3, 2, 4])).toBeCloseTo(3 / Math.sqrt(10), 15);
    expect(spearman([1, 2, 2, 3], [1, 3, 2, 4])).toBeCloseTo(sampleRankCorrelation([1, 2, 2, 3], [1, 3, 2, 4]), 15);
  });

  it('pearson by hand and degenerate cases', () => {
    expect(pearson([1, 2, 3], [2, 4, 6])).toBe(1);
    expect(pearson([1, 2, 3], [3, 2, 1])).toBe(-1);
    expect(pearson([1, 2, 3], [5, 5, 5])).toBeNull(); // zero variance: undefined, not 0
    expect(pearson([1], [1])).toBeNull();
    expect(spearman([1, 1, 1], [1, 2, 3])).toBeNull();
  });
});

describe('Dow 30 adjusted closes 1990-2001 (real data)', () => {
  const dow = loadDow();
  const ref = referenceReturns(dow.series);

  it('pearson: every one of the 435 pairs matches simple-statistics sampleCorrelation to 1e-12', () => {
    const m = correlationMatrix(dow.series, 'pearson');
    expect(m.usableIndices.length).toBe(30);
    expect(m.pairs.length).toBe(435);
    expect(m.alignedObservations).toBe(ref[0].length);
    expect(m.alignedObservations).toBe(dow.series[0].dates.length - 1);
    let maxDev = 0;
    for (const p of m.pairs) {
      expect(p.a).toBeLessThan(p.b);
      const r = sampleCorrelation(ref[p.a], ref[p.b]);
      maxDev = Math.max(maxDev, Math.abs(p.correlation! - r));
      expect(p.correlation!).toBeGreaterThanOrEqual(-1);
      expect(p.correlation!).toBeLessThanOrEqual(1);
    }
    console.log(`pearson: max |deviation| vs simple-statistics over 435 pairs = ${maxDev.toExponential(2)}`);
    expect(maxDev).toBeLessThan(1e-12);
  });

  it('spearman (midranks; the data hold many tied zero returns) matches sampleRankCorrelation to 1e-12', () => {
    const m = correlationMatrix(dow.series, 'spearman');
    // the tie case is really exercised: some stock has repeated zero returns
    expect(ref.some((r) => r.filter((x) => x === 0).length > 10)).toBe(true);
    let maxDev = 0;
    for (const p of m.pairs) {
      const r = sampleRankCorrelation(ref[p.a], ref[p.b]);
      maxDev = Math.max(maxDev, Math.abs(p.correlation! - r));
      expect(Math.abs(p.correlation!)).toBeLessThanOrEqual(1);
    }
    console.log(`spearman: max |deviation| vs simple-statistics over 435 pairs = ${maxDev.toExponential(2)}`);
    expect(maxDev).toBeLessThan(1e-12);
  });

  it('the matrix is symmetric: reversing the input order gives identical pair values', () => {
    for (const method of ['pearson', 'spearman'] as const) {
      const fwd = correlationMatrix(dow.series, method);
      const rev = correlationMatrix([...dow.series].reverse(), method);
      const key = (a: number, b: number) => `${Math.min(a, b)}-${Math.max(a, b)}`;
      const fm = new Map(fwd.pairs.map((p) => [key(p.a, p.b), p.correlation]));
      for (const p of rev.pairs) {
        const a = 29 - p.a;
        const b = 29 - p.b;
        expect(Math.abs(p.correlation! - fm.get(key(a, b))!)).toBeLessThan(1e-15);
      }
      expect(rev.pairs.length).toBe(435);
    }
  });

  it('a one-year window (2000) of five stocks: aligned returns and pairs', () => {
    const from = day('2000-01-01');
    const pick = ['MSFT', 'INTC', 'GE', 'XOM', 'KO'].map((n) => dow.names.indexOf(n));
    const win = pick.map((k) => {
      const s = dow.series[k];
      const keep = Array.from(s.dates.keys()).filter((i) => s.dates[i] >= from);
      return series(
        keep.map((i) => s.dates[i]),
        keep.map((i) => s.close[i]),
      );
    });
    const m = correlationMatrix(win);
    const r = referenceReturns(win);
    expect(m.pairs.length).toBe(10);
    for (const p of m.pairs) expect(Math.abs(p.correlation! - sampleCorrelation(r[p.a], r[p.b]))).toBeLessThan(1e-12);
  });
});

describe('instruments with too little data', () => {
  const dates = Array.from({ length: 60 }, (_, i) => 18_000 + i);
  const walk = (seed: number) => {
    let x = 100;
    let s = seed;
    return dates.map(() => {
      s = (s * 1103515245 + 12345) % 2 ** 31;
      x *= Math.exp((s / 2 ** 31 - 0.5) * 0.04);
      return x;
    });
  };

  it(`an instrument with fewer than ${CORRELATION_MIN_OBSERVATIONS} returns is reported with its count and left out of the pairs`, () => {
    const m = correlationMatrix([series(dates, walk(1)), series(dates.slice(0, 3), walk(2).slice(0, 3)), series(dates, walk(3))]);
    expect(m.instruments[1]).toEqual({ index: 1, observations: 2, usable: false, reason: 'insufficient_observations' });
    expect(m.usableIndices).toEqual([0, 2]);
    expect(m.pairs.map((p) => [p.a, p.b])).toEqual([[0, 2]]);
    expect(m.alignedObservations).toBe(59); // not cut down to the short series
    const ref = referenceReturns([series(dates, walk(1)), series(dates, walk(3))]);
    expect(m.pairs[0].correlation).toBeCloseTo(sampleCorrelation(ref[0], ref[1]), 12);
  });

  it('fewer than two usable instruments: no pairs, the caller answers invalid_request', () => {
    const m = correlationMatrix([series(dates, walk(1)), series([18_000, 18_001], [1, 2])]);
    expect(m.usableIndices).toEqual([0]);
    expect(m.pairs).toEqual([]);
    expect(m.instruments[1]).toMatchObject({ observations: 1, usable: false });
    expect(correlationMatrix([series([], []), series([], [])]).usableIndices).toEqual([]);
  });

  it('no common dates with the others: excluded as insufficient_overlap, the rest still paired', () => {
    const later = dates.map((d) => d + 1000);
    const m = correlationMatrix([series(dates, walk(1)), series(dates, walk(2)), series(later, walk(3))]);
    expect(m.instruments[2]).toEqual({ index: 2, observations: 59, usable: false, reason: 'insufficient_overlap' });
    expect(m.usableIndices).toEqual([0, 1]);
    expect(m.alignedObservations).toBe(59);
  });

  it('a constant series has an undefined correlation (null), never 0', () => {
    const m = correlationMatrix([
      series(dates, walk(1)),
      series(
        dates,
        dates.map(() => 50),
      ),
    ]);
    expect(m.pairs[0].correlation).toBeNull();
  });
});
