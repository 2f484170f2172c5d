// Technical indicators against INDEPENDENT references on the real S&P 500
// daily series (2000-01-03 .. 2020-04-17, 5,104 bars):
//   1. TA-Lib (npm `talib`, the C library through node-gyp) when its native
//      binding loads. npm only builds it when its install script is allowed,
//      so on a machine where it is not built these cases are skipped;
//   2. npm `technicalindicators` (no rounding unless its `precision` config is
//      set, which we never do; its RSI always rounds to 2 decimals, so it is
//      not used for RSI);
//   3. a direct textbook re-implementation written below, in a different
//      style from workers/technicals.ts (used for RSI and Ichimoku).
// Every comparison is element-wise over the full series to 1e-8 absolute.
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { ATR, BollingerBands, EMA, IchimokuCloud, MACD, SMA, Stochastic, WMA } from 'technicalindicators';
import {
  ATR_HIGH_VOLATILITY,
  MACD_CROSSOVER_LOOKBACK,
  RSI_OVERBOUGHT,
  RSI_OVERSOLD,
  atrSeries,
  bollingerSeries,
  computeTechnicals,
  emaSeries,
  macdSeries,
  maStackScore,
  rsiSeries,
  smaSeries,
  stochasticSeries,
  wmaSeries,
  type OhlcvBars,
} from '../../workers/technicals.ts';

const TOL = 1e-8;

function loadSp500(): OhlcvBars & { dates: string[] } {
  const project = new URL('../../server/demo/data/sp500_daily_2000_2020.csv', import.meta.url);
  const path = existsSync(project) ? project : '/work/shared/data/real/sp500_daily_2000_2020.csv';
  const lines = readFileSync(path, 'utf8').trim().split('\n');
  const header = lines[0].split(',');
  const rows = lines.slice(1).map((l) => l.split(','));
  const col = (name: string) => Float64Array.from(rows.map((r) => Number(r[header.indexOf(name)])));
  return { dates: rows.map((r) => r[0]), open: col('open'), high: col('high'), low: col('low'), close: col('close'), volume: col('volume') };
}

interface TalibResult { begIndex: number; nbElement: number; result: Record<string, number[]> }
interface Talib { execute(p: Record<string, unknown>): TalibResult }
function loadTalib(): Talib | null {
  try {
    const t = createRequire(import.meta.url)('talib') as Talib;
    t.execute({ name: 'SMA', startIdx: 0, endIdx: 1, inReal: [1, 2], optInTimePeriod: 2 });
    return t;
  } catch {
    return null;
  }
}

const sp = loadSp500();
const N = sp.close.length;
const talib = loadTalib();
const closeArr = Array.from(sp.close);
const highArr = Array.from(sp.high);
const lowArr = Array.from(sp.low);
const deviations: Record<string, number> = {};

/**
 * Max |mine[i] − ref[i − begIndex]| over the reference's range; also checks
 * that `mine` is NaN before begIndex and that the lengths line up.
 */
function maxDev(label: string, mine: Float64Array, ref: ArrayLike<number>, begIndex: number, from = begIndex): number {
  expect(begIndex + ref.length).toBe(mine.length);
  for (let i = 0; i < begIndex; i++) expect(Number.isNaN(mine[i]), `${label}: index ${i} should be NaN`).toBe(true);
  let m = 0;
  for (let i = Math.max(from, begIndex); i < mine.length; i++) {
    const d = Math.abs(mine[i] - ref[i - begIndex]);
    if (!(d <= m)) m = d; // NaN makes m NaN and fails below
  }
  deviations[label] = Math.max(deviations[label] ?? 0, m);
  return m;
}

function ta(name: string, opts: Record<string, unknown>, inputs: Record<string, unknown> = { inReal: closeArr }): TalibResult {
  return talib!.execute({ name, startIdx: 0, endIdx: N - 1, ...inputs, ...opts });
}

// ---------------------------------------------------------------------------
// Direct textbook references (written independently of the worker).
// ---------------------------------------------------------------------------

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

function midpoint(h: number[], l: number[], end: number, p: number): number {
  return (Math.max(...h.slice(end - p + 1, end + 1)) + Math.min(...l.slice(end - p + 1, end + 1))) / 2;
}

describe('indicator series vs independent references (S&P 500 daily, 5,104 bars)', () => {
  it('the data set is the real one', () => {
    expect(N).toBe(5104);
    expect(sp.dates[0]).toBe('2000-01-03');
    // spot check quoted in SOURCES.md: S&P 500 closed at 1106.42 on 2008-09-29
    expect(sp.close[sp.dates.indexOf('2008-09-29')]).toBeCloseTo(1106.42, 2);
  });

  for (const p of [12, 20, 50, 200]) {
    it(`EMA(${p}) (SMA-seeded) matches technicalindicators${talib ? ' and TA-Lib' : ''}`, () => {
      const mine = emaSeries(sp.close, p);
      expect(maxDev(`EMA${p}`, mine, EMA.calculate({ period: p, values: closeArr }), p - 1)).toBeLessThan(TOL);
      if (talib) {
        const r = ta('EMA', { optInTimePeriod: p });
        expect(maxDev(`EMA${p}`, mine, r.result.outReal, r.begIndex)).toBeLessThan(TOL);
      }
    });
  }

  for (const p of [20, 50, 200]) {
    it(`SMA(${p}) matches technicalindicators${talib ? ' and TA-Lib' : ''}`, () => {
      const mine = smaSeries(sp.close, p);
      expect(maxDev(`SMA${p}`, mine, SMA.calculate({ period: p, values: closeArr }), p - 1)).toBeLessThan(TOL);
      if (talib) {
        const r = ta('SMA', { optInTimePeriod: p });
        expect(maxDev(`SMA${p}`, mine, r.result.outReal, r.begIndex)).toBeLessThan(TOL);
      }
    });
  }

  for (const p of [20, 50, 100]) {
    it(`WMA(${p}) matches technicalindicators${talib ? ' and TA-Lib' : ''}`, () => {
      const mine = wmaSeries(sp.close, p);
      expect(maxDev(`WMA${p}`, mine, WMA.calculate({ period: p, values: closeArr }), p - 1)).toBeLessThan(TOL);
      if (talib) {
        const r = ta('WMA', { optInTimePeriod: p });
        expect(maxDev(`WMA${p}`, mine, r.result.outReal, r.begIndex)).toBeLessThan(TOL);
      }
    });
  }

  it(`RSI(14) (Wilder) matches a textbook implementation${talib ? ' and TA-Lib' : ''}`, () => {
    const mine = rsiSeries(sp.close, 14);
    const ref = textbookRsi(closeArr, 14);
    expect(maxDev('RSI14', mine, ref.slice(14), 14)).toBeLessThan(TOL);
    if (talib) {
      const r = ta('RSI', { optInTimePeriod: 14 });
      expect(r.begIndex).toBe(14);
      expect(maxDev('RSI14', mine, r.result.outReal, r.begIndex)).toBeLessThan(TOL);
    }
  });

  it('MACD(12,26,9) matches technicalindicators (EMA oscillator and EMA signal)', () => {
    const mine = macdSeries(sp.close);
    const ref = MACD.calculate({ values: closeArr, fastPeriod: 12, slowPeriod: 26, signalPeriod: 9, SimpleMAOscillator: false, SimpleMASignal: false });
    expect(maxDev('MACD line', mine.macd, ref.map((x) => x.MACD as number), 25)).toBeLessThan(TOL);
    const sig = ref.slice(8);
    expect(maxDev('MACD signal', mine.signal, sig.map((x) => x.signal as number), 33)).toBeLessThan(TOL);
    expect(maxDev('MACD histogram', mine.histogram, sig.map((x) => x.histogram as number), 33)).toBeLessThan(TOL);
  });

  it.skipIf(!talib)('MACD(12,26,9) matches TA-Lib: exactly via TA_EMA composition, and TA_MACD once its different fast-EMA seed has decayed', () => {
    const mine = macdSeries(sp.close);
    // Same convention as ours, built from TA-Lib's own EMA: EMA12 − EMA26, then EMA9 of that line.
    const e12 = ta('EMA', { optInTimePeriod: 12 });
    const e26 = ta('EMA', { optInTimePeriod: 26 });
    const line = e26.result.outReal.map((v, i) => e12.result.outReal[i + e26.begIndex - e12.begIndex] - v);
    expect(maxDev('MACD line', mine.macd, line, e26.begIndex)).toBeLessThan(TOL);
    const s9 = talib!.execute({ name: 'EMA', startIdx: 0, endIdx: line.length - 1, inReal: line, optInTimePeriod: 9 });
    expect(maxDev('MACD signal', mine.signal, s9.result.outReal, e26.begIndex + s9.begIndex)).toBeLessThan(TOL);
    // TA_MACD seeds its fast EMA with the SMA of bars 14..25 instead of 0..11
    // (it starts both EMAs at the slow lookback). The difference decays as
    // (11/13)^t; from bar 400 on it is below 1e-20 of the seed gap.
    const m = ta('MACD', { optInFastPeriod: 12, optInSlowPeriod: 26, optInSignalPeriod: 9 });
    expect(m.begIndex).toBe(33);
    expect(maxDev('MACD line (TA_MACD, bars >= 400)', mine.macd, [...new Array(33 - 25).fill(NaN), ...m.result.outMACD].slice(0), 25, 400)).toBeLessThan(TOL);
    expect(maxDev('MACD signal (TA_MACD, bars >= 400)', mine.signal, m.result.outMACDSignal, 33, 400)).toBeLessThan(TOL);
    expect(maxDev('MACD histogram (TA_MACD, bars >= 400)', mine.histogram, m.result.outMACDHist, 33, 400)).toBeLessThan(TOL);
  });

  it(`Stochastic %K(14) / %D(3 SMA) matches technicalindicators${talib ? ' and TA-Lib STOCHF' : ''}`, () => {
    const mine = stochasticSeries(sp.high, sp.low, sp.close, 14, 3);
    const ref = Stochastic.calculate({ high: highArr, low: lowArr, close: closeArr, period: 14, signalPeriod: 3 });
    expect(maxDev('Stoch %K', mine.k, ref.map((x) => x.k), 13)).toBeLessThan(TOL);
    expect(maxDev('Stoch %D', mine.d, ref.slice(2).map((x) => x.d as number), 15)).toBeLessThan(TOL);
    if (talib) {
      const r = ta('STOCHF', { optInFastK_Period: 14, optInFastD_Period: 3, optInFastD_MAType: 0 }, { high: highArr, low: lowArr, close: closeArr });
      expect(r.begIndex).toBe(15);
      expect(maxDev('Stoch %K', mine.k, r.result.outFastK, 15)).toBeLessThan(TOL);
      expect(maxDev('Stoch %D', mine.d, r.result.outFastD, 15)).toBeLessThan(TOL);
    }
  });

  it(`Bollinger(20, 2σ population) matches technicalindicators${talib ? ' and TA-Lib BBANDS' : ''}`, () => {
    const mine = bollingerSeries(sp.close, 20, 2);
    const ref = BollingerBands.calculate({ period: 20, stdDev: 2, values: closeArr });
    expect(maxDev('BB upper', mine.upper, ref.map((x) => x.upper), 19)).toBeLessThan(TOL);
    expect(maxDev('BB middle', mine.middle, ref.map((x) => x.middle), 19)).toBeLessThan(TOL);
    expect(maxDev('BB lower', mine.lower, ref.map((x) => x.lower), 19)).toBeLessThan(TOL);
    if (talib) {
      const r = ta('BBANDS', { optInTimePeriod: 20, optInNbDevUp: 2, optInNbDevDn: 2, optInMAType: 0 });
      expect(maxDev('BB upper', mine.upper, r.result.outRealUpperBand, r.begIndex)).toBeLessThan(TOL);
      expect(maxDev('BB middle', mine.middle, r.result.outRealMiddleBand, r.begIndex)).toBeLessThan(TOL);
      expect(maxDev('BB lower', mine.lower, r.result.outRealLowerBand, r.begIndex)).toBeLessThan(TOL);
    }
  });

  it(`ATR(14) (Wilder, TR from bar 1) matches technicalindicators${talib ? ' and TA-Lib' : ''}`, () => {
    const mine = atrSeries(sp.high, sp.low, sp.close, 14);
    const ref = ATR.calculate({ high: highArr, low: lowArr, close: closeArr, period: 14 });
    expect(maxDev('ATR14', mine, ref, 14)).toBeLessThan(TOL);
    if (talib) {
      const r = ta('ATR', { optInTimePeriod: 14 }, { high: highArr, low: lowArr, close: closeArr });
      expect(r.begIndex).toBe(14);
      expect(maxDev('ATR14', mine, r.result.outReal, 14)).toBeLessThan(TOL);
    }
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
      for (let i = 0; i < w.n; i++) { pv += ((h[i] + l[i] + c[i]) / 3) * s.volume[i]; v += s.volume[i]; }
      expect(Math.abs(t.vwap.value! - pv / v)).toBeLessThan(TOL);
      if (talib) {
        const r = talib.execute({ name: 'RSI', startIdx: 0, endIdx: w.n - 1, inReal: c, optInTimePeriod: 14 });
        expect(Math.abs(t.rsi.value! - lastOf(r.result.outReal))).toBeLessThan(TOL);
        const a = talib.execute({ name: 'ATR', startIdx: 0, endIdx: w.n - 1, high: h, low: l, close: c, optInTimePeriod: 14 });
        expect(Math.abs(t.atr.value! - lastOf(a.result.outReal))).toBeLessThan(TOL);
      }
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

  it('reports the measured deviations', () => {
    // printed for the record (see the report); all asserted < 1e-8 above
    console.log('max |deviation| vs references:', JSON.stringify(deviations));
    expect(Object.values(deviations).every((d) => d < TOL)).toBe(true);
  });
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
    expect(t.vwap.value).not.toBeNull(); // one bar suffices
  });

  it('exactly at each threshold the indicator switches from null to a number', () => {
    const at = (n: number) => computeTechnicals(slice(sp, 1000, 1000 + n));
    expect(at(14).rsi.value).toBeNull();
    expect(at(15).rsi.value).not.toBeNull();
    expect(at(33).macd.value).toBeNull();
    expect(at(34).macd.value).not.toBeNull();
    expect(at(34).macd.crossover).toBeNull(); // one histogram value: no crossover can be judged
    expect(at(35).macd.crossover).not.toBeNull();
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
    expect(t.rsi.value).toBe(computeTechnicals(s).rsi.value); // closes unaffected
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

describe('signals and thresholds', () => {
  const synth = (close: number[], spread = 0.005): OhlcvBars => {
    const c = Float64Array.from(close);
    return {
      open: Float64Array.from(close.map((x, i) => (i === 0 ? x : close[i - 1]))),
      high: Float64Array.from(close.map((x, i) => Math.max(x, i === 0 ? x : close[i - 1]) * (1 + spread))),
      low: Float64Array.from(close.map((x, i) => Math.min(x, i === 0 ? x : close[i - 1]) * (1 - spread))),
      close: c,
      volume: new Float64Array(close.length).fill(1000),
    };
  };

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

  it('RSI thresholds are inclusive at 70 and 30', () => {
    expect(RSI_OVERBOUGHT).toBe(70);
    expect(RSI_OVERSOLD).toBe(30);
    // 14 changes with average gain / average loss = 7/3 gives RSI exactly 70
    const c = [100];
    for (let i = 0; i < 14; i++) c.push(c[c.length - 1] + (i < 7 ? 1 : -3 / 7));
    const t = computeTechnicals(synth(c));
    expect(t.rsi.value).toBeCloseTo(70, 10);
  });

  it('MACD crossover is reported only within the lookback', () => {
    expect(MACD_CROSSOVER_LOOKBACK).toBe(3);
    // long decline then a sharp rally: the histogram turns positive at some bar k
    const c = [...Array.from({ length: 80 }, (_, i) => 200 - i), ...Array.from({ length: 30 }, (_, i) => 120 + 4 * (i + 1))];
    const { histogram } = macdSeries(Float64Array.from(c));
    let k = -1;
    for (let i = 34; i < c.length; i++) if (histogram[i - 1] <= 0 && histogram[i] > 0) { k = i; break; }
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
    const calm = computeTechnicals(synth(Array.from({ length: 40 }, (_, i) => 100 + (i % 2 ? 0.1 : -0.1)), 0.0005));
    expect(calm.atr.signal).toBe('low_volatility');
  });

  it('VWAP "at" within ±0.1%', () => {
    const t = computeTechnicals(synth(Array.from({ length: 30 }, (_, i) => 100 + (i % 2 ? 0.01 : -0.01)), 0));
    expect(t.vwap.signal).toBe('at');
  });

  it('moving-average stack score is the mean pairwise sign (Kendall-style)', () => {
    expect(maStackScore([4, 3, 2, 1])).toBe(1);
    expect(maStackScore([1, 2, 3, 4])).toBe(-1);
    expect(maStackScore([3, 4, 2, 1])).toBeCloseTo(4 / 6, 12);
    expect(maStackScore([5])).toBeNull();
  });
});
