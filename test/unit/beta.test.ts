// Beta against simple-statistics (linearRegression, rSquared,
// sampleCovariance / sampleVariance) on returns aligned independently in
// this file, using real data: Dow 30 stocks regressed on the S&P 500 over
// their overlap (2000-01-03 .. 2001-01-02).
import { readFileSync } from 'node:fs';
import { linearRegression, linearRegressionLine, rSquared, sampleCovariance, sampleVariance } from 'simple-statistics';
import { describe, expect, it } from 'vitest';
import { computeBeta, olsBeta } from '../../workers/beta.ts';
import { BETA_MIN_OBSERVATIONS, type DatedCloses } from '../../workers/contract.ts';

const day = (iso: string) => Date.UTC(Number(iso.slice(0, 4)), Number(iso.slice(5, 7)) - 1, Number(iso.slice(8, 10))) / 86_400_000;
const series = (dates: number[], close: number[]): DatedCloses => ({ dates: Int32Array.from(dates), close: Float64Array.from(close) });
const csv = (file: string) => {
  const lines = readFileSync(new URL(`../../server/demo/data/${file}`, import.meta.url), 'utf8')
    .trim()
    .split('\n');
  return { header: lines[0].split(','), rows: lines.slice(1).map((l) => l.split(',')) };
};

/** Independent reference alignment: Map intersection, then log returns between consecutive common dates. */
function alignedReturns(y: DatedCloses, x: DatedCloses): { y: number[]; x: number[] } {
  const my = new Map<number, number>();
  y.dates.forEach((d, i) => my.set(d, y.close[i]));
  const common = Array.from(x.dates).filter((d) => my.has(d));
  const mx = new Map<number, number>();
  x.dates.forEach((d, i) => mx.set(d, x.close[i]));
  const r = (m: Map<number, number>) => common.slice(1).map((d, i) => Math.log(m.get(d)! / m.get(common[i])!));
  return { y: r(my), x: r(mx) };
}

describe('beta on real data: Dow 30 stocks on the S&P 500 (2000)', () => {
  const sp = csv('sp500_daily_2000_2020.csv');
  const spx = series(
    sp.rows.map((r) => day(r[0])),
    sp.rows.map((r) => Number(r[sp.header.indexOf('adjclose')])),
  );
  const dow = csv('dowjones30_adjclose_1990_2001.csv');
  const dowDates = dow.rows.map((r) => day(r[0]));
  const names = dow.header.slice(1);

  it('beta, alpha and R² match simple-statistics to 1e-12 for all 30 stocks', () => {
    const dev = { beta: 0, alpha: 0, rSquared: 0 };
    for (let k = 0; k < names.length; k++) {
      const stock = series(
        dowDates,
        dow.rows.map((r) => Number(r[k + 1])),
      );
      const b = computeBeta(stock, spx);
      const ref = alignedReturns(stock, spx);
      expect(b.observations).toBe(ref.x.length);
      expect(b.observations).toBeGreaterThan(240);
      expect(b.alignedDates).toBe(b.observations + 1);
      expect(b.reason).toBeNull();
      const pts = ref.x.map((x, i) => [x, ref.y[i]]);
      const lr = linearRegression(pts);
      const r2 = rSquared(pts, linearRegressionLine(lr));
      dev.beta = Math.max(dev.beta, Math.abs(b.beta! - lr.m));
      dev.alpha = Math.max(dev.alpha, Math.abs(b.alpha! - lr.b));
      dev.rSquared = Math.max(dev.rSquared, Math.abs(b.rSquared! - r2));
      // second reference: beta = cov(x, y) / var(x)
      expect(Math.abs(b.beta! - sampleCovariance(ref.x, ref.y) / sampleVariance(ref.x))).toBeLessThan(1e-12);
    }
    console.log(`beta vs simple-statistics, max |deviation| over 30 stocks: ${JSON.stringify(dev)}`);
    expect(dev.beta).toBeLessThan(1e-12);
    expect(dev.alpha).toBeLessThan(1e-12);
    expect(dev.rSquared).toBeLessThan(1e-12);
  });

  it('the S&P 500 on itself: beta 1, alpha 0, R² 1 (computed, not substituted)', () => {
    const b = computeBeta(spx, spx);
    expect(b.beta).toBeCloseTo(1, 12);
    expect(b.alpha).toBeCloseTo(0, 15);
    expect(b.rSquared).toBeCloseTo(1, 12);
    expect(b.observations).toBe(spx.dates.length - 1);
  });
});

describe('conventions and edge cases', () => {
  it('known answer: subject log returns = 0.001 + 2·benchmark → beta 2, alpha 0.001 per day, R² 1', () => {
    const rets = [0.01, -0.02, 0.015, 0.003, -0.007, 0.02];
    const dates = Array.from({ length: rets.length + 1 }, (_, i) => 19_000 + i);
    const bench = [100];
    const subj = [50];
    rets.forEach((r) => {
      bench.push(bench[bench.length - 1] * Math.exp(r));
      subj.push(subj[subj.length - 1] * Math.exp(0.001 + 2 * r));
    });
    const b = computeBeta(series(dates, subj), series(dates, bench));
    expect(b.beta).toBeCloseTo(2, 12);
    expect(b.alpha).toBeCloseTo(0.001, 12);
    expect(b.rSquared).toBeCloseTo(1, 12);
    expect(b.observations).toBe(6);
  });

  it('aligns on common dates before taking returns', () => {
    // the subject trades on day 2, the benchmark does not: the aligned return spans days 1 → 3
    const s = series([1, 2, 3, 4, 5], [10, 12, 11, 13, 12]);
    const m = series([1, 3, 4, 5], [100, 101, 99, 102]);
    const b = computeBeta(s, m);
    const ref = alignedReturns(s, m);
    expect(b.observations).toBe(3);
    expect(b.beta).toBeCloseTo(linearRegression(ref.x.map((x, i) => [x, ref.y[i]])).m, 12);
  });

  it(`fewer than ${BETA_MIN_OBSERVATIONS} overlapping returns: all null with insufficient_overlap, never a beta of 1`, () => {
    const three = computeBeta(series([1, 2, 3], [10, 11, 12]), series([1, 2, 3], [100, 102, 101]));
    expect(three).toEqual({ beta: null, alpha: null, rSquared: null, observations: 2, alignedDates: 3, reason: 'insufficient_overlap' });
    const four = computeBeta(series([1, 2, 3, 4], [10, 11, 12, 11]), series([1, 2, 3, 4], [100, 102, 101, 103]));
    expect(four.reason).toBeNull();
    expect(four.observations).toBe(3);
    expect(typeof four.beta).toBe('number');
    const disjoint = computeBeta(series([1, 2, 3, 4], [1, 2, 3, 4]), series([5, 6, 7, 8], [1, 2, 3, 4]));
    expect(disjoint).toMatchObject({ beta: null, observations: 0, alignedDates: 0, reason: 'insufficient_overlap' });
  });

  it('zero benchmark variance: all null with zero_benchmark_variance', () => {
    const b = computeBeta(series([1, 2, 3, 4, 5], [10, 11, 12, 11, 13]), series([1, 2, 3, 4, 5], [100, 100, 100, 100, 100]));
    expect(b).toMatchObject({ beta: null, alpha: null, rSquared: null, observations: 4, reason: 'zero_benchmark_variance' });
  });

  it('zero subject variance: beta 0 and alpha defined, R² undefined (null) with a reason', () => {
    const r = olsBeta([0.01, 0.01, 0.01, 0.01], [0.02, -0.01, 0.005, 0]);
    expect(r.beta).toBe(0);
    expect(r.alpha).toBeCloseTo(0.01, 15);
    expect(r.rSquared).toBeNull();
    expect(r.reason).toBe('zero_subject_variance');
  });
});
