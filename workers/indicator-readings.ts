/**
 * The per-indicator readings of the technicals snapshot: each indicator's
 * values at the latest of the bars supplied, a signal and a description.
 * When the bars are fewer than the indicator needs, every numeric field is
 * null and `description` says why. Series conventions are in
 * indicator-series.ts; the readings add:
 * - Bollinger: bandwidth = (upper − lower)/middle (a fraction, not percent);
 *   percentB = (close − lower)/(upper − lower), null when σ = 0.
 * - VWAP over the window: Σ typical·volume / Σ volume over the bars supplied
 *   (typical = (h + l + c)/3). Null when total volume is 0 (e.g. an index
 *   whose source reports no volume).
 * - Ichimoku(9, 26, 52): tenkan = (HH9 + LL9)/2 and kijun = (HH26 + LL26)/2 at
 *   the latest bar. senkouSpanA / senkouSpanB are the cloud values AT THE
 *   LATEST BAR, i.e. the spans computed 26 bars earlier and displaced 26 bars
 *   forward: A = (tenkan + kijun)/2 at bar n−27, B = (HH52 + LL52)/2 at bar
 *   n−27. chikouSpan is the value of the lagging line that originates at the
 *   latest bar, i.e. the latest close (it is plotted 26 bars back and compared
 *   with the close 26 bars earlier). Needs 78 bars.
 *
 * Signals and thresholds (the constants below):
 * - rsi.signal: `overbought` if RSI >= 70, `oversold` if RSI <= 30, else
 *   `neutral`.
 * - macd.trend: `bullish` if histogram > ε, `bearish` if histogram < −ε,
 *   else `neutral`, with ε = 1e-9·|close| (floating-point noise only).
 * - macd.crossover: the most recent sign change of the histogram between
 *   consecutive bars within the last 3 bars (transitions into bars n−3, n−2,
 *   n−1): from <= 0 to > 0 is `bullish_crossover`, from >= 0 to < 0 is
 *   `bearish_crossover`; none of them → `none`. Null with the other MACD
 *   fields, and null when fewer than 2 histogram values exist.
 * - stochastic.signal: on %K: `overbought` if >= 80, `oversold` if <= 20,
 *   else `neutral`.
 * - ema/sma/wma.trend: the ordered list [close, fastest MA, ..., slowest MA]
 *   (non-null MAs only) is scored over ALL pairs (i < j): +1 when the faster
 *   element is above the slower, −1 when below, 0 when equal; score = mean in
 *   [−1, 1] (a Kendall-style concordance). `bullish` if score >= 0.5,
 *   `bearish` if score <= −0.5, else `neutral`. Null when no MA is available.
 *   ema.strength = |score|, a number in [0, 1] (1 = perfectly stacked).
 * - ichimoku.signal: `bullish` if close > max(spanA, spanB) and tenkan >
 *   kijun; `bearish` if close < min(spanA, spanB) and tenkan < kijun; else
 *   `neutral`.
 * - bollingerBands.signal: `overbought` if percentB >= 1 (close at/above the
 *   upper band), `oversold` if percentB <= 0, else `neutral` (also when σ=0).
 * - atr.signal: by ATR/close: `high_volatility` if >= 0.03, `low_volatility`
 *   if <= 0.01, else `normal_volatility`.
 * - vwap.signal: `at` if |close − vwap|/vwap <= 0.001, else `above`/`below`.
 */
import {
  ATR_PERIOD,
  BOLLINGER_PERIOD,
  MACD_SIGNAL,
  MACD_SLOW,
  RSI_PERIOD,
  STOCH_D_PERIOD,
  STOCH_K_PERIOD,
  atrSeries,
  bollingerSeries,
  emaSeries,
  highestLowest,
  macdSeries,
  rsiSeries,
  smaSeries,
  stochasticSeries,
  wmaSeries,
} from './indicator-series.ts';

export const RSI_OVERBOUGHT = 70;
export const RSI_OVERSOLD = 30;

/** A crossover counts as recent when the histogram changed sign into one of the last N bars. */
export const MACD_CROSSOVER_LOOKBACK = 3;
/** |histogram| <= this × |close| is "neutral" (floating-point noise only). */
const MACD_NEUTRAL_EPSILON = 1e-9;

const STOCH_OVERBOUGHT = 80;
const STOCH_OVERSOLD = 20;

const EMA_PERIODS = [12, 20, 50, 200] as const;
const SMA_PERIODS = [20, 50, 200] as const;
const WMA_PERIODS = [20, 50, 100] as const;
/** Moving-average stack score at or beyond ±this gives bullish / bearish. */
const MA_TREND_THRESHOLD = 0.5;

const ICHIMOKU_TENKAN = 9;
const ICHIMOKU_KIJUN = 26;
const ICHIMOKU_SENKOU_B = 52;
const ICHIMOKU_DISPLACEMENT = 26;

/** ATR / close at or above this is high volatility. */
export const ATR_HIGH_VOLATILITY = 0.03;
/** ATR / close at or below this is low volatility. */
const ATR_LOW_VOLATILITY = 0.01;

/** |close − vwap| / vwap at or below this is `at`. */
const VWAP_AT_TOLERANCE = 0.001;

/** Bars each indicator needs before it is non-null. */
const MIN_BARS = {
  rsi: RSI_PERIOD + 1,
  macd: MACD_SLOW + MACD_SIGNAL - 1,
  stochastic: STOCH_K_PERIOD + STOCH_D_PERIOD - 1,
  bollingerBands: BOLLINGER_PERIOD,
  atr: ATR_PERIOD + 1,
  vwap: 1,
  ichimoku: ICHIMOKU_SENKOU_B + ICHIMOKU_DISPLACEMENT,
} as const;

export const RSI_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
type RsiSignal = (typeof RSI_SIGNALS)[number];
export const MACD_TRENDS = ['bullish', 'bearish', 'neutral'] as const;
type MacdTrend = (typeof MACD_TRENDS)[number];
export const MACD_CROSSOVERS = ['bullish_crossover', 'bearish_crossover', 'none'] as const;
type MacdCrossover = (typeof MACD_CROSSOVERS)[number];
export const STOCHASTIC_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
type StochasticSignal = (typeof STOCHASTIC_SIGNALS)[number];
export const MA_TRENDS = ['bullish', 'bearish', 'neutral'] as const;
type MaTrend = (typeof MA_TRENDS)[number];
export const ICHIMOKU_SIGNALS = ['bullish', 'bearish', 'neutral'] as const;
type IchimokuSignal = (typeof ICHIMOKU_SIGNALS)[number];
export const BOLLINGER_SIGNALS = ['overbought', 'oversold', 'neutral'] as const;
type BollingerSignal = (typeof BOLLINGER_SIGNALS)[number];
export const ATR_SIGNALS = ['high_volatility', 'normal_volatility', 'low_volatility'] as const;
type AtrSignal = (typeof ATR_SIGNALS)[number];
export const VWAP_SIGNALS = ['above', 'below', 'at'] as const;
type VwapSignal = (typeof VWAP_SIGNALS)[number];

export interface RsiResult {
  value: number | null;
  signal: RsiSignal | null;
  period: number;
  description: string;
}
export interface MacdResult {
  value: number | null;
  signal: number | null;
  histogram: number | null;
  trend: MacdTrend | null;
  crossover: MacdCrossover | null;
  description: string;
}
export interface StochasticResult {
  stochK: number | null;
  stochD: number | null;
  signal: StochasticSignal | null;
  description: string;
}
export interface EmaResult {
  ema12: number | null;
  ema20: number | null;
  ema50: number | null;
  ema200: number | null;
  trend: MaTrend | null;
  strength: number | null;
  description: string;
}
export interface SmaResult {
  sma20: number | null;
  sma50: number | null;
  sma200: number | null;
  trend: MaTrend | null;
  description: string;
}
export interface WmaResult {
  wma20: number | null;
  wma50: number | null;
  wma100: number | null;
  trend: MaTrend | null;
  description: string;
}
export interface IchimokuResult {
  tenkan: number | null;
  kijun: number | null;
  senkouSpanA: number | null;
  senkouSpanB: number | null;
  chikouSpan: number | null;
  signal: IchimokuSignal | null;
  description: string;
}
export interface BollingerResult {
  upper: number | null;
  middle: number | null;
  lower: number | null;
  bandwidth: number | null;
  percentB: number | null;
  signal: BollingerSignal | null;
  description: string;
}
export interface AtrResult {
  value: number | null;
  signal: AtrSignal | null;
  period: number;
  description: string;
}
export interface VwapResult {
  value: number | null;
  signal: VwapSignal | null;
  description: string;
}

const nn = (x: number): number | null => (Number.isFinite(x) ? x : null);
const fmt = (x: number): string => (Math.abs(x) >= 1000 ? x.toFixed(2) : x.toPrecision(6));

function needMore(name: string, need: number, have: number, fields: string, total: number): string {
  const gap = have < total ? ` (${total - have} earlier bar(s) lack ${fields})` : '';
  return `${name} needs ${need} bars with ${fields}; only ${have} available${gap}`;
}

/** Mean of sign(faster − slower) over all pairs of the ordered stack. */
export function maStackScore(stack: number[]): number | null {
  if (stack.length < 2) return null;
  let s = 0;
  let m = 0;
  for (let i = 0; i < stack.length; i++) {
    for (let j = i + 1; j < stack.length; j++) {
      s += Math.sign(stack[i] - stack[j]);
      m++;
    }
  }
  return s / m;
}

function maTrend(score: number | null): MaTrend | null {
  if (score === null) return null;
  if (score >= MA_TREND_THRESHOLD) return 'bullish';
  if (score <= -MA_TREND_THRESHOLD) return 'bearish';
  return 'neutral';
}

export function rsiReading(close: Float64Array): RsiResult {
  const n = close.length;
  if (n < MIN_BARS.rsi) {
    return { value: null, signal: null, period: RSI_PERIOD, description: needMore('RSI(14)', MIN_BARS.rsi, n, 'a close', n) };
  }
  const v = rsiSeries(close)[n - 1];
  if (!Number.isFinite(v)) {
    return { value: null, signal: null, period: RSI_PERIOD, description: 'RSI(14) is undefined: the closes did not move over the smoothing window' };
  }
  const signal: RsiSignal = v >= RSI_OVERBOUGHT ? 'overbought' : v <= RSI_OVERSOLD ? 'oversold' : 'neutral';
  const what =
    signal === 'overbought'
      ? `at or above ${RSI_OVERBOUGHT}: overbought`
      : signal === 'oversold'
        ? `at or below ${RSI_OVERSOLD}: oversold`
        : `between ${RSI_OVERSOLD} and ${RSI_OVERBOUGHT}: neutral`;
  return { value: v, signal, period: RSI_PERIOD, description: `Wilder RSI(14) = ${v.toFixed(2)}, ${what}` };
}

export function macdReading(close: Float64Array): MacdResult {
  const n = close.length;
  const empty = { value: null, signal: null, histogram: null, trend: null, crossover: null };
  if (n < MIN_BARS.macd) {
    return { ...empty, description: needMore('MACD(12,26,9)', MIN_BARS.macd, n, 'a close', n) };
  }
  const { macd, signal, histogram } = macdSeries(close);
  const h = histogram[n - 1];
  const eps = MACD_NEUTRAL_EPSILON * Math.abs(close[n - 1]);
  const trend: MacdTrend = h > eps ? 'bullish' : h < -eps ? 'bearish' : 'neutral';
  let crossover: MacdCrossover | null = null;
  let crossAgo = -1;
  if (Number.isFinite(histogram[n - 2])) {
    crossover = 'none';
    for (let t = n - 1; t >= Math.max(1, n - MACD_CROSSOVER_LOOKBACK); t--) {
      const a = histogram[t - 1];
      const b = histogram[t];
      if (!Number.isFinite(a)) break;
      if (a <= 0 && b > 0) {
        crossover = 'bullish_crossover';
        crossAgo = n - 1 - t;
        break;
      }
      if (a >= 0 && b < 0) {
        crossover = 'bearish_crossover';
        crossAgo = n - 1 - t;
        break;
      }
    }
  }
  const crossText =
    crossover === 'none' || crossover === null
      ? `no signal-line crossover in the last ${MACD_CROSSOVER_LOOKBACK} bars`
      : `${crossover === 'bullish_crossover' ? 'bullish' : 'bearish'} crossover ${crossAgo === 0 ? 'on the latest bar' : `${crossAgo} bar(s) ago`}`;
  return {
    value: macd[n - 1],
    signal: signal[n - 1],
    histogram: h,
    trend,
    crossover,
    description: `MACD(12,26,9) line ${fmt(macd[n - 1])} ${h > 0 ? 'above' : h < 0 ? 'below' : 'at'} its signal ${fmt(signal[n - 1])} (histogram ${fmt(h)}): ${trend}; ${crossText}`,
  };
}

export function stochasticReading(high: Float64Array, low: Float64Array, close: Float64Array, total: number): StochasticResult {
  const n = close.length;
  if (n < MIN_BARS.stochastic) {
    return { stochK: null, stochD: null, signal: null, description: needMore('Stochastic(14,3)', MIN_BARS.stochastic, n, 'high, low and close', total) };
  }
  const { k, d } = stochasticSeries(high, low, close);
  const K = k[n - 1];
  const D = d[n - 1];
  if (!Number.isFinite(K) || !Number.isFinite(D)) {
    return {
      stochK: nn(K),
      stochD: nn(D),
      signal: null,
      description: 'Stochastic(14,3) is undefined: the 14-bar high-low range was zero in at least one of the last 3 windows',
    };
  }
  const signal: StochasticSignal = K >= STOCH_OVERBOUGHT ? 'overbought' : K <= STOCH_OVERSOLD ? 'oversold' : 'neutral';
  return {
    stochK: K,
    stochD: D,
    signal,
    description: `Stochastic %K(14) = ${K.toFixed(2)}, %D(3) = ${D.toFixed(2)}: ${signal} (%K >= ${STOCH_OVERBOUGHT} overbought, <= ${STOCH_OVERSOLD} oversold)`,
  };
}

function maGroup(
  kind: 'EMA' | 'SMA' | 'WMA',
  close: Float64Array,
  periods: readonly number[],
  fn: (v: Float64Array, p: number) => Float64Array,
): { values: (number | null)[]; score: number | null; description: string } {
  const n = close.length;
  const values = periods.map((p) => (n >= p ? fn(close, p)[n - 1] : null));
  const avail: number[] = [close[n - 1]];
  values.forEach((v) => {
    if (v !== null) avail.push(v);
  });
  const score = n > 0 ? maStackScore(avail) : null;
  const missing = periods.filter((_, i) => values[i] === null);
  const parts: string[] = [];
  periods.forEach((p, i) => {
    if (values[i] !== null) parts.push(`${kind}${p} ${fmt(values[i] as number)}`);
  });
  let description: string;
  if (score === null) {
    description = `${kind}s need at least ${periods[0]} bars; only ${n} available`;
  } else {
    const trend = maTrend(score);
    description = `close ${fmt(close[n - 1])} vs ${parts.join(', ')}: stack score ${score.toFixed(2)} → ${trend}`;
  }
  if (missing.length > 0 && score !== null) {
    description += `; ${missing.map((p) => `${kind}${p}`).join(', ')} null (needs ${missing.join('/')} bars, ${n} available)`;
  }
  return { values, score, description };
}

export function movingAverageReadings(close: Float64Array): { ema: EmaResult; sma: SmaResult; wma: WmaResult } {
  const e = maGroup('EMA', close, EMA_PERIODS, emaSeries);
  const ema: EmaResult = {
    ema12: e.values[0],
    ema20: e.values[1],
    ema50: e.values[2],
    ema200: e.values[3],
    trend: maTrend(e.score),
    strength: e.score === null ? null : Math.abs(e.score),
    description: e.description,
  };
  const s = maGroup('SMA', close, SMA_PERIODS, smaSeries);
  const sma: SmaResult = { sma20: s.values[0], sma50: s.values[1], sma200: s.values[2], trend: maTrend(s.score), description: s.description };
  const w = maGroup('WMA', close, WMA_PERIODS, wmaSeries);
  const wma: WmaResult = { wma20: w.values[0], wma50: w.values[1], wma100: w.values[2], trend: maTrend(w.score), description: w.description };
  return { ema, sma, wma };
}

export function ichimokuReading(high: Float64Array, low: Float64Array, close: Float64Array, total: number): IchimokuResult {
  const n = close.length;
  const empty = { tenkan: null, kijun: null, senkouSpanA: null, senkouSpanB: null, chikouSpan: null, signal: null };
  if (n < MIN_BARS.ichimoku) {
    return { ...empty, description: needMore('Ichimoku(9,26,52)', MIN_BARS.ichimoku, n, 'high and low', total) };
  }
  const mid = (end: number, p: number) => {
    const [hh, ll] = highestLowest(high, low, end, p);
    return (hh + ll) / 2;
  };
  const last = n - 1;
  const tenkan = mid(last, ICHIMOKU_TENKAN);
  const kijun = mid(last, ICHIMOKU_KIJUN);
  const src = last - ICHIMOKU_DISPLACEMENT;
  const senkouSpanA = (mid(src, ICHIMOKU_TENKAN) + mid(src, ICHIMOKU_KIJUN)) / 2;
  const senkouSpanB = mid(src, ICHIMOKU_SENKOU_B);
  const c = close[last];
  const top = Math.max(senkouSpanA, senkouSpanB);
  const bottom = Math.min(senkouSpanA, senkouSpanB);
  const signal: IchimokuSignal = c > top && tenkan > kijun ? 'bullish' : c < bottom && tenkan < kijun ? 'bearish' : 'neutral';
  const where = c > top ? 'above' : c < bottom ? 'below' : 'inside';
  return {
    tenkan,
    kijun,
    senkouSpanA,
    senkouSpanB,
    chikouSpan: c,
    signal,
    description:
      `close ${fmt(c)} ${where} the cloud at the latest bar (spans ${fmt(senkouSpanA)} / ${fmt(senkouSpanB)}, computed 26 bars earlier), ` +
      `tenkan ${fmt(tenkan)} ${tenkan > kijun ? '>' : tenkan < kijun ? '<' : '='} kijun ${fmt(kijun)}: ${signal}; ` +
      `chikou = latest close, compared with the close 26 bars earlier (${fmt(close[last - ICHIMOKU_DISPLACEMENT])})`,
  };
}

export function bollingerReading(close: Float64Array): BollingerResult {
  const n = close.length;
  if (n < MIN_BARS.bollingerBands) {
    return {
      upper: null,
      middle: null,
      lower: null,
      bandwidth: null,
      percentB: null,
      signal: null,
      description: needMore('Bollinger(20,2)', MIN_BARS.bollingerBands, n, 'a close', n),
    };
  }
  const { upper, middle, lower } = bollingerSeries(close);
  const u = upper[n - 1];
  const m = middle[n - 1];
  const l = lower[n - 1];
  const c = close[n - 1];
  const bandwidth = m !== 0 ? (u - l) / m : null;
  const percentB = u > l ? (c - l) / (u - l) : null;
  const signal: BollingerSignal = percentB === null ? 'neutral' : percentB >= 1 ? 'overbought' : percentB <= 0 ? 'oversold' : 'neutral';
  return {
    upper: u,
    middle: m,
    lower: l,
    bandwidth,
    percentB,
    signal,
    description:
      percentB === null
        ? 'Bollinger(20,2): the last 20 closes are identical (σ = 0), so %B is undefined'
        : `Bollinger(20, 2σ population): close ${fmt(c)} at %B ${percentB.toFixed(3)} (bands ${fmt(l)}–${fmt(u)}): ${signal}`,
  };
}

export function atrReading(high: Float64Array, low: Float64Array, close: Float64Array, total: number): AtrResult {
  const n = close.length;
  if (n < MIN_BARS.atr) {
    return { value: null, signal: null, period: ATR_PERIOD, description: needMore('ATR(14)', MIN_BARS.atr, n, 'high, low and close', total) };
  }
  const v = atrSeries(high, low, close)[n - 1];
  const ratio = v / close[n - 1];
  const signal: AtrSignal = ratio >= ATR_HIGH_VOLATILITY ? 'high_volatility' : ratio <= ATR_LOW_VOLATILITY ? 'low_volatility' : 'normal_volatility';
  return {
    value: v,
    signal,
    period: ATR_PERIOD,
    description: `Wilder ATR(14) = ${fmt(v)} (${(ratio * 100).toFixed(2)}% of close): ${signal} (>= ${ATR_HIGH_VOLATILITY * 100}% high, <= ${ATR_LOW_VOLATILITY * 100}% low)`,
  };
}

export function vwapReading(high: Float64Array, low: Float64Array, close: Float64Array, volume: Float64Array, total: number): VwapResult {
  const n = close.length;
  if (n < MIN_BARS.vwap) {
    return { value: null, signal: null, description: needMore('VWAP', 1, n, 'high, low, close and volume', total) };
  }
  let pv = 0;
  let v = 0;
  for (let i = 0; i < n; i++) {
    pv += ((high[i] + low[i] + close[i]) / 3) * volume[i];
    v += volume[i];
  }
  if (!(v > 0)) {
    return { value: null, signal: null, description: `VWAP is undefined: total volume over the ${n} bars is zero` };
  }
  const vwap = pv / v;
  const c = close[n - 1];
  const rel = (c - vwap) / vwap;
  const signal: VwapSignal = Math.abs(rel) <= VWAP_AT_TOLERANCE ? 'at' : rel > 0 ? 'above' : 'below';
  const gap = n < total ? ` (the ${total - n} earlier bar(s) lack high/low/volume)` : '';
  return {
    value: vwap,
    signal,
    description: `VWAP over the last ${n} daily bars${gap} = ${fmt(vwap)}; close ${fmt(c)} is ${signal} it (${(rel * 100).toFixed(2)}%, 'at' within ±${VWAP_AT_TOLERANCE * 100}%)`,
  };
}
