// Technical indicators against INDEPENDENT references on the real S&P 500
// daily series (2000-01-03 .. 2020-04-17, 5,105 bars). Every reference is
// pure JavaScript available wherever `npm ci` runs (no native build), and
// every check runs unconditionally:
//   1. npm `technicalindicators` (no rounding unless its `precision` config is
//      set, which we never do). Its RSI always rounds to 2 decimals, so for
//      RSI we use its unrounded Wilder averages (AverageGain / AverageLoss)
//      and check its published RSI only to that rounding;
//   2. direct textbook re-implementations written below, in a different
//      style from workers/indicator-series.ts (plain arrays, window slices, the
//      k·x + (1−k)·prev form of the EMA, Welford variance, α = 1/N Wilder
//      smoothing): SMA, EMA, WMA, RSI, MACD (EMA12 − EMA26, signal = EMA9 of
//      that line), Stochastic, Bollinger, ATR and the Ichimoku midpoints.
// Every comparison is element-wise over the full series to 1e-8 absolute,
// over a range that is asserted to be non-empty (the one looser tolerance,
// for the 2-decimal RSI of technicalindicators, is justified where it is used).
import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ATR, AverageGain, AverageLoss, BollingerBands, EMA, IchimokuCloud, MACD, RSI, SMA, Stochastic, WMA } from 'technicalindicators';
import { MACD_CROSSOVER_LOOKBACK, RSI_OVERBOUGHT, RSI_OVERSOLD, maStackScore } from '../../workers/indicator-readings.ts';
import type { OhlcvBars } from '../../workers/contract.ts';
import { ATR_HIGH_VOLATILITY } from '../../workers/band-readings.ts';
import { atrSeries, bollingerSeries, emaSeries, macdSeries, rsiSeries, smaSeries, stochasticSeries, wmaSeries } from '../../workers/indicator-series.ts';
import { computeTechnicals } from '../../workers/technicals.ts';

const TOL = 1e-8;

function loadSp500(): OhlcvBars & { dates: string[] } {
  const lines = readFileSync(new URL('../../server/demo/data/sp500_daily_2000_2020.csv', import.meta.url), 'utf8')
    .trim()
    .split('\n');
  const header = lines[0].split(',');
  const rows = lines.slice(1).map((l) => l.split(','));
  const col = (name: string) => Float64Array.from(rows.map((r) => Number(r[header.indexOf(name)])));
  return { dates: rows.map((r) => r[0]), open: col('open'), high: col('high'), low: col('low'), close: col('close'), volume: col('volume') };
}

const sp = loadSp500();
const N = sp.close.length;
const closeArr = Array.from(sp.close);
const highArr = Array.from(sp.high);
const lowArr = Array.from(sp.low);
/**
 * Largest deviation seen per comparison, with the tolerance it was asserted
 * against: each test asserts its own, and the deviations of the tests that ran
 * are printed after the file, for the record.
 */
const deviations: Record<string, { dev: number; tol: number }> = {};
afterAll(() => {
  const rows = Object.entries(deviations);
  if (rows.length)
    console.log(`max |deviation| vs references:\n${rows.map(([k, v]) => `  ${k}: ${v.dev.toExponential(2)} (tol ${v.tol.toExponential(0)})`).join('\n')}`);
});

/**
 * Max |mine[i] − ref[i − begIndex]| over the reference's range (from `from`
 * on); also checks that the lengths line up, that `mine` is NaN before
 * `nanBefore`, and that at least one element is compared.
 */
function maxDev(label: string, mine: Float64Array, ref: ArrayLike<number>, begIndex: number, from = begIndex, nanBefore = begIndex, tol = TOL): number {
  expect(begIndex + ref.length).toBe(mine.length);
  for (let i = 0; i < nanBefore; i++) expect(Number.isNaN(mine[i]), `${label}: index ${i} should be NaN`).toBe(true);
  const start = Math.max(from, begIndex);
  expect(mine.length - start, `${label}: compared range is empty`).toBeGreaterThan(0);
  let m = 0;
  for (let i = start; i < mine.length; i++) {
    const d = Math.abs(mine[i] - ref[i - begIndex]);
    if (!(d <= m)) m = d; // NaN makes m NaN and fails below
  }
  const prev = deviations[label];
  deviations[label] = { dev: prev === undefined || Number.isNaN(m) ? m : Math.max(prev.dev, m), tol };
  return m;
}

/**
 * A full-length textbook series from its first defined bar on; asserts that
 * it is NaN exactly before `first` and finite at `first`.
 */
function definedFrom(ref: number[], first: number): number[] {
  expect(ref.length).toBe(N);
  expect(ref.slice(0, first).every((x) => Number.isNaN(x))).toBe(true);
  expect(Number.isFinite(ref[first])).toBe(true);
  return ref.slice(first);
}

// ---------------------------------------------------------------------------
// Direct textbook references (written independently of the worker).
// ---------------------------------------------------------------------------

const mean = (xs: number[]): number => xs.reduce((a, b) => a + b, 0) / xs.length;
/** The p values ending at index i (inclusive). */
const windowAt = (xs: number[], i: number, p: number): number[] => xs.slice(i - p + 1, i + 1);

/** SMA(p): the mean of each p-bar window. */
function textbookSma(x: number[], p: number): number[] {
  return x.map((_, i) => (i < p - 1 ? NaN : mean(windowAt(x, i, p))));
}

/** EMA(p), α = 2/(p+1), seeded with the mean of the first p values: e_t = α·x_t + (1−α)·e_{t−1}. */
function textbookEma(x: number[], p: number): number[] {
  const alpha = 2 / (p + 1);
  const out = x.map(() => NaN);
  out[p - 1] = mean(x.slice(0, p));
  for (let t = p; t < x.length; t++) out[t] = alpha * x[t] + (1 - alpha) * out[t - 1];
  return out;
}

/** WMA(p): Σ w_j·x_j / Σ w_j with w = 1 for the oldest bar of the window … p for the newest. */
function textbookWma(x: number[], p: number): number[] {
  return x.map((_, i) => {
    if (i < p - 1) return NaN;
    const win = windowAt(x, i, p);
    const weights = win.map((_v, j) => j + 1);
    return win.reduce((a, v, j) => a + weights[j] * v, 0) / weights.reduce((a, w) => a + w, 0);
  });
}

/** Wilder (1978): RS = avg gain / avg loss, RSI = 100 − 100/(1 + RS). */
function textbookRsi(c: number[], p: number): number[] {
  const out: number[] = new Array(c.length).fill(NaN);
  const gains = c.map((x, i) => (i === 0 ? 0 : Math.max(0, x - c[i - 1])));
  const losses = c.map((x, i) => (i === 0 ? 0 : Math.max(0, c[i - 1] - x)));
  let ag = gains.slice(1, p + 1).reduce((a, b) => a + b, 0) / p;
  let al = losses.slice(1, p + 1).reduce((a, b) => a + b, 0) / p;
  out[p] = al === 0 ? 100 : 100 - 100 / (1 + ag / al);
  for (let i = p + 1; i < c.length; i++) {
    ag = (ag * (p - 1) + gains[i]) / p;
    al = (al * (p - 1) + losses[i]) / p;
    out[i] = al === 0 ? 100 : 100 - 100 / (1 + ag / al);
  }
  return out;
}

/**
 * Appel's MACD as the textbook composition: line = EMA_fast − EMA_slow (both
 * SMA-seeded on the first bars, so the line starts at bar slow−1); signal =
 * EMA_sig of the line, seeded with the mean of its first `sig` values;
 * histogram = line − signal.
 */
function textbookMacd(c: number[], fast = 12, slow = 26, sig = 9): { line: number[]; signal: number[]; histogram: number[] } {
  const ef = textbookEma(c, fast);
  const es = textbookEma(c, slow);
  const line = c.map((_, i) => (i < slow - 1 ? NaN : ef[i] - es[i]));
  const signal = [...new Array(slow - 1).fill(NaN), ...textbookEma(line.slice(slow - 1), sig)];
  return { line, signal, histogram: line.map((m, i) => m - signal[i]) };
}

/** Fast stochastic: %K = 100·(c − LL_p)/(HH_p − LL_p), %D = mean of the last d %K. */
function textbookStochastic(h: number[], l: number[], c: number[], p: number, d: number): { k: number[]; d: number[] } {
  const k = c.map((x, i) => {
    if (i < p - 1) return NaN;
    const hh = Math.max(...windowAt(h, i, p));
    const ll = Math.min(...windowAt(l, i, p));
    return (100 * (x - ll)) / (hh - ll);
  });
  return { k, d: k.map((_, i) => (i < p + d - 2 ? NaN : mean(windowAt(k, i, d)))) };
}

/** Bollinger: mean ± m·σ, σ the population standard deviation of the window (Welford's recurrence). */
function textbookBollinger(x: number[], p: number, m: number): { upper: number[]; middle: number[]; lower: number[] } {
  const upper: number[] = [];
  const middle: number[] = [];
  const lower: number[] = [];
  x.forEach((_, i) => {
    if (i < p - 1) {
      upper.push(NaN);
      middle.push(NaN);
      lower.push(NaN);
      return;
    }
    let mu = 0;
    let m2 = 0;
    windowAt(x, i, p).forEach((v, j) => {
      const delta = v - mu;
      mu += delta / (j + 1);
      m2 += delta * (v - mu);
    });
    const sigma = Math.sqrt(m2 / p);
    upper.push(mu + m * sigma);
    middle.push(mu);
    lower.push(mu - m * sigma);
  });
  return { upper, middle, lower };
}

/**
 * Wilder ATR: TR_t = max(h_t − l_t, |h_t − c_{t−1}|, |l_t − c_{t−1}|) for t >= 1;
 * ATR_p = mean(TR_1..TR_p), then Wilder smoothing as an EMA with α = 1/p.
 */
function textbookAtr(h: number[], l: number[], c: number[], p: number): number[] {
  const tr = c.map((_, t) => (t === 0 ? NaN : Math.max(h[t] - l[t], Math.abs(h[t] - c[t - 1]), Math.abs(l[t] - c[t - 1]))));
  const out = c.map(() => NaN);
  out[p] = mean(tr.slice(1, p + 1));
  for (let t = p + 1; t < c.length; t++) out[t] = out[t - 1] + (tr[t] - out[t - 1]) / p;
  return out;
}

/** RSI from technicalindicators' unrounded Wilder average gain / loss (its own RSI rounds to 2 decimals). */
function libraryRsi(c: number[], p: number): number[] {
  const g = AverageGain.calculate({ period: p, values: c });
  const l = AverageLoss.calculate({ period: p, values: c });
  expect(g.length).toBe(c.length - p);
  expect(l.length).toBe(c.length - p);
  return g.map((gi, i) => (100 * gi) / (gi + l[i]));
}

function midpoint(h: number[], l: number[], end: number, p: number): number {
  return (Math.max(...h.slice(end - p + 1, end + 1)) + Math.min(...l.slice(end - p + 1, end + 1))) / 2;
}

describe('indicator series vs independent references (S&P 500 daily, 5,105 bars)', () => {
  it('the data set is the real one', () => {
    expect(N).toBe(5105); // server/demo/data/SOURCES.md: the upstream note says 5,104 rows; the file holds 5,105 distinct dates
    expect(sp.dates[0]).toBe('2000-01-03');
    expect(sp.dates[N - 1]).toBe('2020-04-17');
    // spot check: the S&P 500 closed at 1106.42 on 2008-09-29
    expect(sp.close[sp.dates.indexOf('2008-09-29')]).toBeCloseTo(1106.42, 2);
  });

  for (const p of [12, 20, 50, 200]) {
    it(`EMA(${p}) (SMA-seeded) matches technicalindicators and a textbook EMA`, () => {
      const mine = emaSeries(sp.close, p);
      expect(maxDev(`EMA${p} vs technicalindicators`, mine, EMA.calculate({ period: p, values: closeArr }), p - 1)).toBeLessThan(TOL);
      expect(maxDev(`EMA${p} vs textbook`, mine, definedFrom(textbookEma(closeArr, p), p - 1), p - 1)).toBeLessThan(TOL);
    });
  }

  for (const p of [20, 50, 200]) {
    it(`SMA(${p}) matches technicalindicators and a textbook SMA`, () => {
      const mine = smaSeries(sp.close, p);
      expect(maxDev(`SMA${p} vs technicalindicators`, mine, SMA.calculate({ period: p, values: closeArr }), p - 1)).toBeLessThan(TOL);
      expect(maxDev(`SMA${p} vs textbook`, mine, definedFrom(textbookSma(closeArr, p), p - 1), p - 1)).toBeLessThan(TOL);
    });
  }

  for (const p of [20, 50, 100]) {
    it(`WMA(${p}) matches technicalindicators and a textbook WMA`, () => {
      const mine = wmaSeries(sp.close, p);
      expect(maxDev(`WMA${p} vs technicalindicators`, mine, WMA.calculate({ period: p, values: closeArr }), p - 1)).toBeLessThan(TOL);
      expect(maxDev(`WMA${p} vs textbook`, mine, definedFrom(textbookWma(closeArr, p), p - 1), p - 1)).toBeLessThan(TOL);
    });
  }

  it("RSI(14) (Wilder) matches a textbook implementation and technicalindicators' Wilder averages", () => {
    const mine = rsiSeries(sp.close, 14);
    expect(maxDev('RSI14 vs textbook', mine, definedFrom(textbookRsi(closeArr, 14), 14), 14)).toBeLessThan(TOL);
    expect(maxDev('RSI14 vs technicalindicators AverageGain/AverageLoss', mine, libraryRsi(closeArr, 14), 14)).toBeLessThan(TOL);
    // technicalindicators' own RSI rounds every value with toFixed(2), so it can
    // only agree to half a unit in the 2nd decimal: 0.005, plus 1e-9 for the
    // binary representation of the rounded decimal. This checks that its
    // published RSI uses the same Wilder definition (same first bar, 14).
    const RSI_2DP_TOL = 0.005 + 1e-9;
    expect(
      maxDev('RSI14 vs technicalindicators RSI (2 decimals)', mine, RSI.calculate({ period: 14, values: closeArr }), 14, 14, 14, RSI_2DP_TOL),
    ).toBeLessThan(RSI_2DP_TOL);
  });

  it('MACD(12,26,9) matches technicalindicators (EMA oscillator and EMA signal)', () => {
    const mine = macdSeries(sp.close);
    const ref = MACD.calculate({ values: closeArr, fastPeriod: 12, slowPeriod: 26, signalPeriod: 9, SimpleMAOscillator: false, SimpleMASignal: false });
    // its seeding convention is ours: the line starts at bar 25 (both EMAs
    // SMA-seeded on the first bars), the signal at bar 33, seeded with the
    // mean of the first 9 line values
    expect(ref.length).toBe(N - 25);
    expect(ref.slice(0, 8).every((x) => x.signal === undefined && x.histogram === undefined)).toBe(true);
    expect(Math.abs((ref[8].signal as number) - mean(ref.slice(0, 9).map((x) => x.MACD as number)))).toBeLessThan(TOL);
    expect(
      maxDev(
        'MACD line vs technicalindicators',
        mine.macd,
        ref.map((x) => x.MACD as number),
        25,
      ),
    ).toBeLessThan(TOL);
    const sig = ref.slice(8);
    expect(
      maxDev(
        'MACD signal vs technicalindicators',
        mine.signal,
        sig.map((x) => x.signal as number),
        33,
      ),
    ).toBeLessThan(TOL);
    expect(
      maxDev(
        'MACD histogram vs technicalindicators',
        mine.histogram,
        sig.map((x) => x.histogram as number),
        33,
      ),
    ).toBeLessThan(TOL);
  });

  it('MACD(12,26,9) matches the textbook composition EMA12 − EMA26, signal EMA9 of that line', () => {
    const mine = macdSeries(sp.close);
    const ref = textbookMacd(closeArr);
    expect(maxDev('MACD line vs textbook', mine.macd, definedFrom(ref.line, 25), 25)).toBeLessThan(TOL);
    expect(maxDev('MACD signal vs textbook', mine.signal, definedFrom(ref.signal, 33), 33)).toBeLessThan(TOL);
    expect(maxDev('MACD histogram vs textbook', mine.histogram, definedFrom(ref.histogram, 33), 33)).toBeLessThan(TOL);
  });

  it('the MACD comparisons are sensitive to the seeding convention (so they are not vacuous)', () => {
    const mine = macdSeries(sp.close);
    const ref = textbookMacd(closeArr);
    // TA-Lib's TA_MACD seeds the fast EMA with the mean of bars 14..25 (it
    // starts both EMAs at the slow lookback) instead of bars 0..11.
    const lateFast = [...new Array(14).fill(NaN), ...textbookEma(closeArr.slice(14), 12)];
    const es = textbookEma(closeArr, 26);
    expect(Math.abs(mine.macd[33] - (lateFast[33] - es[33]))).toBeGreaterThan(1e-3);
    // A signal EMA seeded with the first line value instead of the mean of the first 9.
    const alpha = 2 / 10;
    let s = ref.line[25];
    for (let t = 26; t <= 33; t++) s = alpha * ref.line[t] + (1 - alpha) * s;
    expect(Math.abs(mine.signal[33] - s)).toBeGreaterThan(1e-3);
  });

  it('Stochastic %K(14) / %D(3 SMA) matches technicalindicators and a textbook fast stochastic', () => {
    const mine = stochasticSeries(sp.high, sp.low, sp.close, 14, 3);
    const ref = Stochastic.calculate({ high: highArr, low: lowArr, close: closeArr, period: 14, signalPeriod: 3 });
    expect(
      maxDev(
        'Stoch %K vs technicalindicators',
        mine.k,
        ref.map((x) => x.k),
        13,
      ),
    ).toBeLessThan(TOL);
    expect(
      maxDev(
        'Stoch %D vs technicalindicators',
        mine.d,
        ref.slice(2).map((x) => x.d as number),
        15,
      ),
    ).toBeLessThan(TOL);
    const tb = textbookStochastic(highArr, lowArr, closeArr, 14, 3);
    expect(maxDev('Stoch %K vs textbook', mine.k, definedFrom(tb.k, 13), 13)).toBeLessThan(TOL);
    expect(maxDev('Stoch %D vs textbook', mine.d, definedFrom(tb.d, 15), 15)).toBeLessThan(TOL);
  });

  it('Bollinger(20, 2σ population) matches technicalindicators and a textbook (Welford) computation', () => {
    const mine = bollingerSeries(sp.close, 20, 2);
    const ref = BollingerBands.calculate({ period: 20, stdDev: 2, values: closeArr });
    expect(
      maxDev(
        'BB upper vs technicalindicators',
        mine.upper,
        ref.map((x) => x.upper),
        19,
      ),
    ).toBeLessThan(TOL);
    expect(
      maxDev(
        'BB middle vs technicalindicators',
        mine.middle,
        ref.map((x) => x.middle),
        19,
      ),
    ).toBeLessThan(TOL);
    expect(
      maxDev(
        'BB lower vs technicalindicators',
        mine.lower,
        ref.map((x) => x.lower),
        19,
      ),
    ).toBeLessThan(TOL);
    const tb = textbookBollinger(closeArr, 20, 2);
    expect(maxDev('BB upper vs textbook', mine.upper, definedFrom(tb.upper, 19), 19)).toBeLessThan(TOL);
    expect(maxDev('BB middle vs textbook', mine.middle, definedFrom(tb.middle, 19), 19)).toBeLessThan(TOL);
    expect(maxDev('BB lower vs textbook', mine.lower, definedFrom(tb.lower, 19), 19)).toBeLessThan(TOL);
  });

  it('ATR(14) (Wilder, TR from bar 1) matches technicalindicators and a textbook ATR', () => {
    const mine = atrSeries(sp.high, sp.low, sp.close, 14);
    const ref = ATR.calculate({ high: highArr, low: lowArr, close: closeArr, period: 14 });
    expect(maxDev('ATR14 vs technicalindicators', mine, ref, 14)).toBeLessThan(TOL);
    expect(maxDev('ATR14 vs textbook', mine, definedFrom(textbookAtr(highArr, lowArr, closeArr, 14), 14), 14)).toBeLessThan(TOL);
  });

  it('Ichimoku in the snapshot matches technicalindicators (undisplaced lines) and a textbook midpoint computation', () => {
    const ic = IchimokuCloud.calculate({ high: highArr, low: lowArr, conversionPeriod: 9, basePeriod: 26, spanPeriod: 52, displacement: 26 });
    const off = N - ic.length; // first output at bar 51
    expect(off).toBe(51);
    for (const n of [78, 140, 300, 1000, N]) {
      const s = n === N ? sp : slice(sp, N - n, N);
      const t = computeTechnicals(s).ichimoku;
      const last = N - 1;
      expect(Math.abs(t.tenkan! - ic[last - off].conversion)).toBeLessThan(TOL);
      expect(Math.abs(t.kijun! - ic[last - off].base)).toBeLessThan(TOL);
      // senkou spans at the latest bar = the spans computed 26 bars earlier
      expect(Math.abs(t.senkouSpanA! - ic[last - 26 - off].spanA)).toBeLessThan(TOL);
      expect(Math.abs(t.senkouSpanB! - ic[last - 26 - off].spanB)).toBeLessThan(TOL);
      expect(Math.abs(t.senkouSpanB! - midpoint(highArr, lowArr, last - 26, 52))).toBeLessThan(TOL);
      expect(t.chikouSpan).toBe(sp.close[last]);
    }
  });
});

function slice(b: OhlcvBars, from: number, to: number): OhlcvBars {
  return {
    open: b.open.slice(from, to),
    high: b.high.slice(from, to),
    low: b.low.slice(from, to),
    close: b.close.slice(from, to),
    volume: b.volume.slice(from, to),
  };
}

describe('computeTechnicals snapshot on real windows', () => {
  // Windows of different lengths ending at different dates (2008 crisis, 2017 calm, the 2020 crash).
  const windows = [
    { end: sp.dates.indexOf('2008-10-10') + 1, n: 140 },
    { end: sp.dates.indexOf('2017-06-30') + 1, n: 250 },
    { end: N, n: 140 },
    { end: N, n: 690 },
  ];
  for (const w of windows) {
    it(`latest values equal the independent references on the same ${w.n} bars ending ${sp.dates[w.end - 1]}`, () => {
      const s = slice(sp, w.end - w.n, w.end);
      const c = Array.from(s.close);
      const h = Array.from(s.high);
      const l = Array.from(s.low);
      const t = computeTechnicals(s);
      expect(t.dataPoints).toBe(w.n);
      const lastOf = <T>(a: T[]) => a[a.length - 1];
      expect(Math.abs(t.rsi.value! - lastOf(textbookRsi(c, 14)))).toBeLessThan(TOL);
      expect(Math.abs(t.ema.ema12! - lastOf(EMA.calculate({ period: 12, values: c })))).toBeLessThan(TOL);
      expect(Math.abs(t.ema.ema50! - lastOf(EMA.calculate({ period: 50, values: c })))).toBeLessThan(TOL);
      expect(Math.abs(t.sma.sma20! - lastOf(SMA.calculate({ period: 20, values: c })))).toBeLessThan(TOL);
      expect(Math.abs(t.wma.wma100! - lastOf(WMA.calculate({ period: 100, values: c })))).toBeLessThan(TOL);
      if (w.n >= 200) {
        expect(Math.abs(t.ema.ema200! - lastOf(EMA.calculate({ period: 200, values: c })))).toBeLessThan(TOL);
        expect(Math.abs(t.sma.sma200! - lastOf(SMA.calculate({ period: 200, values: c })))).toBeLessThan(TOL);
      } else {
        expect(t.ema.ema200).toBeNull();
        expect(t.sma.sma200).toBeNull();
        expect(t.ema.description).toMatch(/EMA200 null/);
      }
      const m = lastOf(MACD.calculate({ values: c, fastPeriod: 12, slowPeriod: 26, signalPeriod: 9, SimpleMAOscillator: false, SimpleMASignal: false }));
      expect(Math.abs(t.macd.value! - m.MACD!)).toBeLessThan(TOL);
      expect(Math.abs(t.macd.signal! - m.signal!)).toBeLessThan(TOL);
      expect(Math.abs(t.macd.histogram! - m.histogram!)).toBeLessThan(TOL);
      const st = lastOf(Stochastic.calculate({ high: h, low: l, close: c, period: 14, signalPeriod: 3 }));
      expect(Math.abs(t.stochastic.stochK! - st.k)).toBeLessThan(TOL);
      expect(Math.abs(t.stochastic.stochD! - st.d!)).toBeLessThan(TOL);
      const bb = lastOf(BollingerBands.calculate({ period: 20, stdDev: 2, values: c }));
      expect(Math.abs(t.bollingerBands.upper! - bb.upper)).toBeLessThan(TOL);
      expect(Math.abs(t.bollingerBands.lower! - bb.lower)).toBeLessThan(TOL);
      expect(Math.abs(t.bollingerBands.percentB! - bb.pb)).toBeLessThan(1e-10);
      expect(Math.abs(t.atr.value! - lastOf(ATR.calculate({ high: h, low: l, close: c, period: 14 })))).toBeLessThan(TOL);
      // VWAP: direct definition
      let pv = 0;
      let v = 0;
      for (let i = 0; i < w.n; i++) {
        pv += ((h[i] + l[i] + c[i]) / 3) * s.volume[i];
        v += s.volume[i];
      }
      expect(Math.abs(t.vwap.value! - pv / v)).toBeLessThan(TOL);
      // second references, written in the test
      expect(Math.abs(t.rsi.value! - lastOf(libraryRsi(c, 14)))).toBeLessThan(TOL);
      expect(Math.abs(t.atr.value! - lastOf(textbookAtr(h, l, c, 14)))).toBeLessThan(TOL);
      const tm = textbookMacd(c);
      expect(Math.abs(t.macd.value! - lastOf(tm.line))).toBeLessThan(TOL);
      expect(Math.abs(t.macd.signal! - lastOf(tm.signal))).toBeLessThan(TOL);
      expect(Math.abs(t.macd.histogram! - lastOf(tm.histogram))).toBeLessThan(TOL);
      expect(Math.abs(t.ema.ema20! - lastOf(textbookEma(c, 20)))).toBeLessThan(TOL);
      const tbb = textbookBollinger(c, 20, 2);
      expect(Math.abs(t.bollingerBands.upper! - lastOf(tbb.upper))).toBeLessThan(TOL);
      expect(Math.abs(t.bollingerBands.lower! - lastOf(tbb.lower))).toBeLessThan(TOL);
      const tst = textbookStochastic(h, l, c, 14, 3);
      expect(Math.abs(t.stochastic.stochK! - lastOf(tst.k))).toBeLessThan(TOL);
      expect(Math.abs(t.stochastic.stochD! - lastOf(tst.d))).toBeLessThan(TOL);
      // every description is a string, every enum is from its set
      for (const [k, sec] of Object.entries(t)) {
        if (k === 'dataPoints') continue;
        expect(typeof (sec as { description: unknown }).description, k).toBe('string');
      }
      expect(['overbought', 'oversold', 'neutral']).toContain(t.rsi.signal);
      expect(['bullish', 'bearish', 'neutral']).toContain(t.macd.trend);
      expect(['bullish_crossover', 'bearish_crossover', 'none']).toContain(t.macd.crossover);
      expect(['high_volatility', 'normal_volatility', 'low_volatility']).toContain(t.atr.signal);
      expect(['above', 'below', 'at']).toContain(t.vwap.signal);
      expect(['bullish', 'bearish', 'neutral']).toContain(t.trend.direction);
      expect(t.trend.strength).toBeGreaterThanOrEqual(0);
      expect(t.trend.strength).toBeLessThanOrEqual(1);
      expect(t.trend.confidence).toBeGreaterThanOrEqual(0);
      expect(t.trend.confidence).toBeLessThanOrEqual(1);
      // the result crosses a worker boundary: it must survive structured cloning unchanged
      expect(structuredClone(t)).toEqual(t);
    });
  }
});

describe('nulls when data is insufficient or missing', () => {
  it('too few bars: each indicator is null with a string description saying why', () => {
    const t = computeTechnicals(slice(sp, 0, 10));
    expect(t.dataPoints).toBe(10);
    expect(t.rsi).toMatchObject({ value: null, signal: null, period: 14 });
    expect(t.rsi.description).toMatch(/needs 15 bars/);
    expect(t.macd).toMatchObject({ value: null, signal: null, histogram: null, trend: null, crossover: null });
    expect(t.macd.description).toMatch(/needs 34 bars/);
    expect(t.stochastic).toMatchObject({ stochK: null, stochD: null, signal: null });
    expect(t.ema).toMatchObject({ ema12: null, ema20: null, ema50: null, ema200: null, trend: null, strength: null });
    expect(t.bollingerBands.upper).toBeNull();
    expect(t.atr.value).toBeNull();
    expect(t.ichimoku.tenkan).toBeNull();
    expect(t.ichimoku.description).toMatch(/needs 78 bars/);
    expect(t.chartPatterns).toMatchObject({ patterns: [], dominantPattern: null });
    expect(t.sma).toMatchObject({ sma20: null, sma50: null, sma200: null, trend: null });
    expect(t.wma).toMatchObject({ wma20: null, wma50: null, wma100: null, trend: null });
    // Every indicator that needs more than the 10 bars says what it needs and that 10 are available.
    for (const [name, section] of Object.entries({
      rsi: t.rsi,
      macd: t.macd,
      stochastic: t.stochastic,
      ema: t.ema,
      sma: t.sma,
      wma: t.wma,
      ichimoku: t.ichimoku,
      bollingerBands: t.bollingerBands,
      atr: t.atr,
      chartPatterns: t.chartPatterns,
    })) {
      expect(section.description, name).toMatch(/needs? .*\b10 available/);
    }
    expect(t.vwap.value).not.toBeNull(); // one bar suffices
  });

  it('exactly at each threshold the indicator switches from null to a number', () => {
    const at = (n: number) => computeTechnicals(slice(sp, 1000, 1000 + n));
    expect(at(14).rsi.value).toBeNull();
    expect(at(15).rsi.value).not.toBeNull();
    expect(at(33).macd.value).toBeNull();
    expect(at(34).macd.value).not.toBeNull();
    expect(at(34).macd.crossover).toBeNull(); // one histogram value: no crossover can be judged
    expect(at(37).macd.crossover).not.toBeNull(); // all 3 transitions of the lookback exist: a crossover or none
    expect(at(15).stochastic.stochD).toBeNull();
    expect(at(16).stochastic.stochD).not.toBeNull();
    expect(at(14).atr.value).toBeNull();
    expect(at(15).atr.value).not.toBeNull();
    expect(at(19).bollingerBands.middle).toBeNull();
    expect(at(20).bollingerBands.middle).not.toBeNull();
    expect(at(77).ichimoku.senkouSpanB).toBeNull();
    expect(at(78).ichimoku.senkouSpanB).not.toBeNull();
    expect(at(99).wma.wma100).toBeNull();
    expect(at(100).wma.wma100).not.toBeNull();
  });

  it('closes only (open/high/low/volume NaN): close-based indicators computed, the others null, nothing invented', () => {
    const s = slice(sp, 2000, 2300);
    const nan = () => new Float64Array(300).fill(NaN);
    const t = computeTechnicals({ open: nan(), high: nan(), low: nan(), close: s.close, volume: nan() });
    const full = computeTechnicals(s);
    expect(t.rsi.value).toBe(full.rsi.value);
    expect(t.macd.value).toBe(full.macd.value);
    expect(t.sma.sma200).toBe(full.sma.sma200);
    expect(t.bollingerBands.upper).toBe(full.bollingerBands.upper);
    expect(t.stochastic).toMatchObject({ stochK: null, stochD: null, signal: null });
    expect(t.atr).toMatchObject({ value: null, signal: null });
    expect(t.ichimoku).toMatchObject({ tenkan: null, kijun: null, senkouSpanA: null, senkouSpanB: null, chikouSpan: null, signal: null });
    expect(t.vwap).toMatchObject({ value: null, signal: null });
    expect(t.candlestick).toMatchObject({ signal: null, confidence: null, patterns: [] });
    for (const sec of [t.stochastic, t.atr, t.ichimoku, t.vwap, t.candlestick]) expect(typeof sec.description).toBe('string');
  });

  it('a gap in high/low: ATR uses only the trailing run of complete bars', () => {
    const s = slice(sp, 3000, 3100);
    s.high[49] = NaN;
    const t = computeTechnicals(s);
    const tail = slice(sp, 3050, 3100);
    expect(t.atr.value).toBe(computeTechnicals(tail).atr.value);
    expect(t.stochastic.stochK).toBe(computeTechnicals(tail).stochastic.stochK);
    expect(t.ichimoku.tenkan).toBeNull(); // 50 complete bars < 78
    expect(t.ichimoku.description).toMatch(/lack high and low/);
    // RSI reads closes only: the same as over the bars without the gap, and a real figure.
    const intact = computeTechnicals(slice(sp, 3000, 3100));
    expect(intact.rsi.value).not.toBeNull();
    expect(t.rsi.value).toBe(intact.rsi.value);
    expect(intact.atr.value).not.toBe(t.atr.value);
  });

  it('zero volume gives a null VWAP (never 0)', () => {
    const s = slice(sp, 0, 50);
    s.volume.fill(0);
    expect(computeTechnicals(s).vwap).toMatchObject({ value: null, signal: null });
  });

  it('a flat series: RSI, stochastic and %B are undefined, not invented', () => {
    const n = 60;
    const flat = new Float64Array(n).fill(100);
    const t = computeTechnicals({ open: flat, high: flat, low: flat, close: flat, volume: new Float64Array(n).fill(1) });
    expect(t.rsi.value).toBeNull();
    expect(t.stochastic.stochK).toBeNull();
    expect(t.bollingerBands.percentB).toBeNull();
    expect(t.bollingerBands.middle).toBe(100);
    expect(t.atr.value).toBe(0);
    expect(t.atr.signal).toBe('low_volatility');
  });

  it('arrays of different lengths are rejected', () => {
    const s = slice(sp, 0, 50);
    expect(() => computeTechnicals({ ...s, volume: s.volume.subarray(1) })).toThrow(TypeError);
  });
});

/** Bars from closes: each opens at the previous close, its high and low `spread` beyond, volume 1000. */
function synth(close: number[], spread = 0.005): OhlcvBars {
  const c = Float64Array.from(close);
  return {
    open: Float64Array.from(close.map((x, i) => (i === 0 ? x : close[i - 1]))),
    high: Float64Array.from(close.map((x, i) => Math.max(x, i === 0 ? x : close[i - 1]) * (1 + spread))),
    low: Float64Array.from(close.map((x, i) => Math.min(x, i === 0 ? x : close[i - 1]) * (1 - spread))),
    close: c,
    volume: new Float64Array(close.length).fill(1000),
  };
}

describe('signals and thresholds', () => {
  it('steady rise: RSI 100 overbought, stochastic overbought, MAs bullish, consensus bullish', () => {
    const t = computeTechnicals(synth(Array.from({ length: 250 }, (_, i) => 100 * 1.004 ** i)));
    expect(t.rsi.value).toBe(100);
    expect(t.rsi.signal).toBe('overbought');
    expect(t.stochastic.signal).toBe('overbought');
    expect(t.ema.trend).toBe('bullish');
    expect(t.ema.strength).toBe(1);
    expect(t.sma.trend).toBe('bullish');
    expect(t.wma.trend).toBe('bullish');
    expect(t.macd.trend).toBe('bullish');
    expect(t.ichimoku.signal).toBe('bullish');
    expect(t.vwap.signal).toBe('above');
    expect(t.trend.direction).toBe('bullish');
    expect(t.trend.strength).toBeGreaterThan(0.9);
  });

  it('steady fall: the mirror', () => {
    const t = computeTechnicals(synth(Array.from({ length: 250 }, (_, i) => 100 * 0.996 ** i)));
    expect(t.rsi.value).toBe(0);
    expect(t.rsi.signal).toBe('oversold');
    expect(t.stochastic.signal).toBe('oversold');
    expect(t.ema.trend).toBe('bearish');
    expect(t.ichimoku.signal).toBe('bearish');
    expect(t.vwap.signal).toBe('below');
    expect(t.trend.direction).toBe('bearish');
  });

  it('RSI thresholds: overbought at >= 70, oversold at <= 30', () => {
    expect(RSI_OVERBOUGHT).toBe(70);
    expect(RSI_OVERSOLD).toBe(30);
    // 14 changes: 7 gains of 1 and 7 losses of 3/7 → avg gain / avg loss = 7/3 → RSI 70 (up to rounding)
    const c = [100];
    for (let i = 0; i < 14; i++) c.push(c[c.length - 1] + (i < 7 ? 1 : -3 / 7));
    const t = computeTechnicals(synth(c));
    expect(t.rsi.value).toBeCloseTo(70, 10);
    expect(t.rsi.signal).toBe(t.rsi.value! >= 70 ? 'overbought' : 'neutral');
    // just above / below the bands
    const up = [100];
    for (let i = 0; i < 14; i++) up.push(up[up.length - 1] + (i < 8 ? 1 : -0.5));
    expect(computeTechnicals(synth(up)).rsi).toMatchObject({ signal: 'overbought' }); // 8/(8+3) = 72.7
    const down = [100];
    for (let i = 0; i < 14; i++) down.push(down[down.length - 1] + (i < 3 ? 1 : -1));
    expect(computeTechnicals(synth(down)).rsi).toMatchObject({ signal: 'oversold' }); // 3/(3+11) = 21.4
  });

  it('MACD crossover is reported only within the lookback', () => {
    expect(MACD_CROSSOVER_LOOKBACK).toBe(3);
    // long decline then a sharp rally: the histogram turns positive at some bar k
    const c = [...Array.from({ length: 80 }, (_, i) => 200 - i), ...Array.from({ length: 30 }, (_, i) => 120 + 4 * (i + 1))];
    const { histogram } = macdSeries(Float64Array.from(c));
    let k = -1;
    for (let i = 34; i < c.length; i++)
      if (histogram[i - 1] <= 0 && histogram[i] > 0) {
        k = i;
        break;
      }
    expect(k).toBeGreaterThan(0);
    for (let extra = 0; extra < 6; extra++) {
      const t = computeTechnicals(synth(c.slice(0, k + 1 + extra)));
      expect(t.macd.crossover).toBe(extra < 3 ? 'bullish_crossover' : 'none');
    }
  });

  it('ATR volatility signal uses ATR / close against 3% and 1%', () => {
    expect(ATR_HIGH_VOLATILITY).toBe(0.03);
    const wild = computeTechnicals(synth(Array.from({ length: 40 }, (_, i) => 100 + (i % 2 ? 4 : -4))));
    expect(wild.atr.signal).toBe('high_volatility');
    const calm = computeTechnicals(
      synth(
        Array.from({ length: 40 }, (_, i) => 100 + (i % 2 ? 0.1 : -0.1)),
        0.0005,
      ),
    );
    expect(calm.atr.signal).toBe('low_volatility');
  });

  it('VWAP "at" within ±0.1%', () => {
    const t = computeTechnicals(
      synth(
        Array.from({ length: 30 }, (_, i) => 100 + (i % 2 ? 0.01 : -0.01)),
        0,
      ),
    );
    expect(t.vwap.signal).toBe('at');
  });

  it('moving-average stack score is the mean pairwise sign (Kendall-style)', () => {
    expect(maStackScore([4, 3, 2, 1])).toBe(1);
    expect(maStackScore([1, 2, 3, 4])).toBe(-1);
    expect(maStackScore([3, 4, 2, 1])).toBeCloseTo(4 / 6, 12);
    expect(maStackScore([5])).toBeNull();
  });
});

/** Bars from [open, high, low, close, volume] rows. */
function candles(rows: [number, number, number, number, number][]): OhlcvBars {
  const col = (k: number) => Float64Array.from(rows.map((r) => r[k]));
  return { open: col(0), high: col(1), low: col(2), close: col(3), volume: col(4) };
}

/** n closes rising 0.4 % a day from 100. */
const risingCloses = (n: number) => Array.from({ length: n }, (_, i) => 100 * 1.004 ** i);
/**
 * A steady rise as synth bars. Their candles match no pattern after the first bar: body 0.4 % of the
 * price against a range of about 1.4 % (no doji, no long body), shadows of 0.5 % (no hammer shape), and
 * every candle is white (no two- or three-candle reversal, no soldiers: the bodies are under half the range).
 */
const rising = (n: number) => synth(risingCloses(n));

/** The fields of a reading that hold a figure or a verdict: not its words, its reason, a fixed period or a pattern list. */
const nullFields = (reading: object) =>
  Object.entries(reading)
    .filter(([k, v]) => !['description', 'reason', 'patterns'].includes(k) && v === null)
    .map(([k]) => k);

describe('too little data: null with a reason, never a verdict or a zero', () => {
  it('when one bar is all there is, then nothing gives a verdict: the trend is null (insufficient_bars), the VWAP is the bar’s typical price without a signal, and the candlestick has no confidence', () => {
    // body 2 of range 4: no doji; the hammer family needs 6 bars before its candle
    const t = computeTechnicals(candles([[100, 103, 99, 102, 1000]]));
    expect(t.dataPoints).toBe(1);
    expect(t.trend).toEqual({ direction: null, strength: null, confidence: null, reason: 'insufficient_bars', description: expect.any(String) });
    expect(t.trend.description).toMatch(/at least 3 indicator votes/);
    expect(t.vwap.value).toBeCloseTo((103 + 99 + 102) / 3, 10);
    expect(t.vwap).toMatchObject({ signal: null, reason: 'insufficient_bars' });
    expect(t.candlestick).toMatchObject({ signal: null, confidence: null, patterns: [], reason: 'insufficient_bars' });
    expect(t.chartPatterns).toMatchObject({ patterns: [], dominantPattern: null, reason: 'insufficient_bars' });
    const verdicts = {
      'rsi.signal': t.rsi.signal,
      'macd.trend': t.macd.trend,
      'macd.crossover': t.macd.crossover,
      'stochastic.signal': t.stochastic.signal,
      'ema.trend': t.ema.trend,
      'ema.strength': t.ema.strength,
      'sma.trend': t.sma.trend,
      'wma.trend': t.wma.trend,
      'ichimoku.signal': t.ichimoku.signal,
      'bollingerBands.signal': t.bollingerBands.signal,
      'atr.signal': t.atr.signal,
    };
    expect(verdicts).toEqual(Object.fromEntries(Object.keys(verdicts).map((k) => [k, null])));
    for (const [name, reading] of Object.entries(t)) {
      if (name !== 'dataPoints') expect((reading as { reason: unknown }).reason, name).toBe('insufficient_bars');
    }
  });

  it('when the one bar is a doji, then the doji is reported: neutral, confidence 0.8 (shape 1, no prior trend to score); the trend still waits, patterns do not count as votes', () => {
    const t = computeTechnicals(candles([[100, 101, 99, 100, 1000]]));
    expect(t.candlestick).toMatchObject({ signal: 'neutral', patterns: [{ name: 'doji', confidence: expect.any(Number) }], reason: null });
    expect(t.candlestick.confidence).toBeCloseTo(0.5 + 0.3 * 1 + 0.2 * 0, 12);
    expect(t.trend).toMatchObject({ direction: null, reason: 'insufficient_bars' });
  });

  it('when there are two bars, then the VWAP has a signal: (100·1000 + 101.33·3000) / 4000 = 101, and the close of 102 is above it', () => {
    const t = computeTechnicals(
      candles([
        [100, 101, 99, 100, 1000],
        [100, 103, 99, 102, 3000],
      ]),
    );
    expect(t.vwap.value).toBeCloseTo(101, 10);
    expect(t.vwap).toMatchObject({ signal: 'above', reason: null });
  });

  it('when only one moving average exists, then its trend is null; from the two fastest (EMA 20 bars, SMA and WMA 50) a steady rise stacks bullish', () => {
    // Over a rise, an average weighting recent closes more is higher, and the close is above every average.
    const at19 = computeTechnicals(rising(19));
    expect(at19.ema.ema12).toEqual(expect.any(Number));
    expect(at19.ema).toMatchObject({ ema20: null, trend: null, strength: null, reason: 'insufficient_bars' });
    const at20 = computeTechnicals(rising(20));
    expect(at20.ema).toMatchObject({ trend: 'bullish', strength: 1, reason: 'insufficient_bars' }); // EMA50 and EMA200 still null
    expect(at20.ema.description).toMatch(/EMA50, EMA200 null/);
    const at49 = computeTechnicals(rising(49));
    expect(at49.sma.sma20).toEqual(expect.any(Number));
    expect(at49.wma.wma20).toEqual(expect.any(Number));
    expect(at49.sma).toMatchObject({ trend: null, reason: 'insufficient_bars' });
    expect(at49.wma).toMatchObject({ trend: null, reason: 'insufficient_bars' });
    const at50 = computeTechnicals(rising(50));
    expect(at50.sma.trend).toBe('bullish');
    expect(at50.wma.trend).toBe('bullish');
    const at200 = computeTechnicals(rising(200));
    expect(at200.ema).toMatchObject({ trend: 'bullish', strength: 1, reason: null });
    expect(at200.sma.reason).toBeNull();
    expect(at200.wma.reason).toBeNull();
  });

  it('when fewer than 3 indicators can vote, then the trend is null; over a steady rise the 3rd vote (EMA) comes at 20 bars: VWAP, RSI and EMA all bullish, strength 1, confidence 2.5/8', () => {
    // 2..14 bars: only VWAP votes; 15..19: VWAP and RSI.
    for (const n of [2, 3, 14, 15, 19]) {
      const t = computeTechnicals(rising(n));
      expect(t.trend, `${n} bars`).toMatchObject({ direction: null, strength: null, confidence: null, reason: 'insufficient_bars' });
    }
    const t = computeTechnicals(rising(20));
    expect(t.candlestick.patterns).toEqual([]);
    expect(t.chartPatterns.patterns).toEqual([]);
    // votes: VWAP +1 (weight 0.5), RSI 100 ≥ 55 → +1 (1), EMA bullish +1 (1); S = 1; coverage 2.5 of 8
    expect(t.vwap.signal).toBe('above');
    expect(t.rsi.value).toBe(100);
    expect(t.trend).toMatchObject({ direction: 'bullish', strength: 1, reason: null });
    expect(t.trend.confidence).toBeCloseTo(2.5 / 8, 12);
  });

  it('when a source has closes only, then stochastic, ATR, Ichimoku, VWAP and candlesticks are null (missing_fields), and the trend waits for MACD, its 3rd vote, at 34 bars (too_few_votes before)', () => {
    const closesOnly = (n: number): OhlcvBars => {
      const nan = () => new Float64Array(n).fill(NaN);
      return { open: nan(), high: nan(), low: nan(), close: Float64Array.from(risingCloses(n)), volume: nan() };
    };
    const at33 = computeTechnicals(closesOnly(33));
    for (const name of ['stochastic', 'atr', 'ichimoku', 'vwap', 'candlestick'] as const) expect(at33[name].reason, name).toBe('missing_fields');
    expect(at33.trend).toMatchObject({ direction: null, reason: 'too_few_votes' }); // RSI and EMA vote: 2
    // The MACD histogram at the 34th bar, by the textbook composition, is positive: a bullish vote.
    expect(textbookMacd(risingCloses(34)).histogram.at(-1)).toBeGreaterThan(0);
    const at34 = computeTechnicals(closesOnly(34));
    expect(at34.macd.trend).toBe('bullish');
    expect(at34.trend).toMatchObject({ direction: 'bullish', strength: 1, reason: null });
    expect(at34.trend.confidence).toBeCloseTo(3 / 8, 12);
  });

  it('when a gap leaves fewer complete bars than a reading needs, then it is missing_fields; a short window without a gap is insufficient_bars', () => {
    const s = slice(sp, 3000, 3100);
    s.high[49] = NaN;
    expect(computeTechnicals(s).ichimoku.reason).toBe('missing_fields'); // 50 complete bars of 100, 78 needed
    expect(computeTechnicals(slice(sp, 3050, 3100)).ichimoku.reason).toBe('insufficient_bars');
  });

  it('when no candlestick pattern completes, then signal and confidence are null, never 0: insufficient_bars below 7 bars, no_pattern from 7', () => {
    expect(computeTechnicals(rising(6)).candlestick).toMatchObject({ signal: null, confidence: null, patterns: [], reason: 'insufficient_bars' });
    expect(computeTechnicals(rising(7)).candlestick).toMatchObject({ signal: null, confidence: null, patterns: [], reason: 'no_pattern' });
  });

  it('when a bullish and a bearish candlestick pattern are equally strong and there is no doji, then the signal is neutral with a null confidence (conflicting_patterns)', () => {
    // Closes 110 → 100 over the 5 bars before the engulfing pair (−9 %, a full down-trend), 95 → 101 over
    // the 5 before the last candle (+6.3 %, a full up-trend). The last candle (O 100, H 115.25, L 99.25,
    // C 103.25) has an upper shadow of 12 of its 16 range: a shooting star, q = (0.75 − 0.5)/0.4 = 0.625;
    // its body of 3.25 (not a doji: above 1.6) engulfs the previous black body of 2: q = 3.25/2 − 1 = 0.625.
    const t = computeTechnicals(
      candles([
        [104, 108, 100, 104, 1000],
        [110, 114, 106, 110, 1000],
        [95, 99, 91, 95, 1000],
        [96, 100, 92, 96, 1000],
        [97, 101, 93, 97, 1000],
        [98, 102, 94, 98, 1000],
        [100, 104, 96, 100, 1000],
        [103, 105, 97, 101, 1000],
        [100, 115.25, 99.25, 103.25, 1000],
      ]),
    );
    const each = 0.5 + 0.3 * 0.625 + 0.2 * 1;
    expect(t.candlestick.patterns).toEqual([
      { name: 'shooting_star', confidence: each },
      { name: 'bullish_engulfing', confidence: each },
    ]);
    expect(t.candlestick).toMatchObject({ signal: 'neutral', confidence: null, reason: 'conflicting_patterns' });
  });

  it('when no chart pattern is found, then dominantPattern is null: insufficient_bars below 26 closes (a triangle cannot fit), no_pattern from 26', () => {
    expect(computeTechnicals(rising(25)).chartPatterns).toMatchObject({ patterns: [], dominantPattern: null, reason: 'insufficient_bars' });
    expect(computeTechnicals(rising(26)).chartPatterns).toMatchObject({ patterns: [], dominantPattern: null, reason: 'no_pattern' });
  });

  it('when fewer than 3 histogram transitions exist, then the MACD crossover is null unless one is found; none is said from 37 bars', () => {
    // A steady rise: by the textbook composition the histogram is positive from its first value on, so no crossover.
    const h = textbookMacd(risingCloses(37)).histogram.slice(33);
    expect(h.every((x) => x > 0)).toBe(true);
    for (const n of [34, 35, 36]) {
      expect(computeTechnicals(rising(n)).macd, `${n} bars`).toMatchObject({ trend: 'bullish', crossover: null, reason: 'insufficient_bars' });
    }
    expect(computeTechnicals(rising(37)).macd).toMatchObject({ crossover: 'none', reason: null });
    // An accelerating fall over 34 bars, then a jump: the histogram turns from negative to positive into bar 34.
    const c = [...Array.from({ length: 34 }, (_, i) => 200 - i - 0.02 * i * i), 200];
    const ref = textbookMacd(c).histogram;
    expect(ref[33]).toBeLessThan(0);
    expect(ref[34]).toBeGreaterThan(0);
    expect(computeTechnicals(synth(c)).macd).toMatchObject({ crossover: 'bullish_crossover', reason: null });
  });

  it('for every window from 1 to 120 bars of the S&P 500, closes only and flat, then each reading’s reason is null exactly when none of its fields is null', () => {
    const nan = (n: number) => new Float64Array(n).fill(NaN);
    const flat = (n: number) => new Float64Array(n).fill(100);
    let withReason = 0;
    let without = 0;
    for (let n = 1; n <= 120; n++) {
      const real = slice(sp, 2000, 2000 + n);
      for (const b of [
        real,
        { open: nan(n), high: nan(n), low: nan(n), close: real.close, volume: nan(n) },
        { open: flat(n), high: flat(n), low: flat(n), close: flat(n), volume: flat(n) },
      ]) {
        const t = computeTechnicals(b);
        for (const [name, reading] of Object.entries(t)) {
          if (name === 'dataPoints') continue;
          const { reason } = reading as { reason: string | null };
          expect({ n, name, reason, nulls: nullFields(reading) }).toEqual(
            reason === null ? { n, name, reason, nulls: [] } : { n, name, reason, nulls: expect.arrayContaining([expect.any(String)]) },
          );
          if (reason === null) without++;
          else withReason++;
        }
      }
    }
    // both sides of the equivalence are exercised
    expect(withReason).toBeGreaterThan(0);
    expect(without).toBeGreaterThan(0);
  });
});
