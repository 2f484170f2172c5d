/**
 * The band, volatility and volume readings of the technicals snapshot
 * (Ichimoku, Bollinger, ATR, VWAP), in the shape of indicator-readings.ts:
 * values at the latest bar, a signal and a description, every numeric field
 * null with the reason when the bars are too few. They add:
 * - Bollinger: bandwidth = (upper − lower)/middle (a fraction, not percent);
 *   percentB = (close − lower)/(upper − lower), null when σ = 0.
 * - VWAP over the window: Σ typical·volume / Σ volume over the bars supplied
 *   (typical = (h + l + c)/3). Null when total volume is 0 (e.g. an index
 *   whose source reports no volume). Its signal needs 2 bars: over one bar
 *   the VWAP is that bar's own typical price, and the close against it says
 *   where the bar closed in its range, not where it stands against the
 *   volume traded before it.
 * - Ichimoku(9, 26, 52): tenkan = (HH9 + LL9)/2 and kijun = (HH26 + LL26)/2 at
 *   the latest bar. senkouSpanA / senkouSpanB are the cloud values AT THE
 *   LATEST BAR, i.e. the spans computed 26 bars earlier and displaced 26 bars
 *   forward: A = (tenkan + kijun)/2 at bar n−27, B = (HH52 + LL52)/2 at bar
 *   n−27. chikouSpan is the value of the lagging line that originates at the
 *   latest bar, i.e. the latest close (it is plotted 26 bars back and compared
 *   with the close 26 bars earlier). Needs 78 bars.
 *
 * Signals and thresholds:
 * - ichimoku.signal: `bullish` if close > max(spanA, spanB) and tenkan >
 *   kijun; `bearish` if close < min(spanA, spanB) and tenkan < kijun; else
 *   `neutral`.
 * - bollingerBands.signal: `overbought` if percentB >= 1 (close at/above the
 *   upper band), `oversold` if percentB <= 0, else `neutral` (also when σ=0).
 * - atr.signal: by ATR/close: `high_volatility` if >= 0.03, `low_volatility`
 *   if <= 0.01, else `normal_volatility`.
 * - vwap.signal: `at` if |close − vwap|/vwap <= 0.001, else `above`/`below`.
 *
 * Each reading's `reason` (contract.ts TECHNICALS_NULL_REASONS) says why any
 * of its fields is null, and is null when none is.
 */
import { fmt, needMore, shortfall } from './indicator-readings.ts';
import { ATR_PERIOD, BOLLINGER_PERIOD, atrSeries, bollingerSeries, highestLowest } from './indicator-series.ts';
import {
  type VwapResult,
  type VwapSignal,
  type AtrResult,
  type AtrSignal,
  type BollingerResult,
  type BollingerSignal,
  type IchimokuResult,
  type IchimokuSignal,
} from './contract.ts';

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

/** Bars each reading (or its signal) needs before it is non-null. */
export const BAND_MIN_BARS = {
  bollingerBands: BOLLINGER_PERIOD,
  atr: ATR_PERIOD + 1,
  vwap: 1,
  vwapSignal: 2,
  ichimoku: ICHIMOKU_SENKOU_B + ICHIMOKU_DISPLACEMENT,
} as const;
const MIN_BARS = BAND_MIN_BARS;

export function ichimokuReading(high: Float64Array, low: Float64Array, close: Float64Array, total: number): IchimokuResult {
  const n = close.length;
  const empty = { tenkan: null, kijun: null, senkouSpanA: null, senkouSpanB: null, chikouSpan: null, signal: null };
  if (n < MIN_BARS.ichimoku) {
    return { ...empty, reason: shortfall(n, total), description: needMore('Ichimoku(9,26,52)', MIN_BARS.ichimoku, n, 'high and low', total) };
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
    reason: null,
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
      reason: 'insufficient_bars',
      description: needMore('Bollinger(20,2)', MIN_BARS.bollingerBands, n, 'a close', n),
    };
  }
  const { upper, middle, lower } = bollingerSeries(close);
  const u = upper[n - 1];
  const m = middle[n - 1];
  const l = lower[n - 1];
  const c = close[n - 1];
  // Closes are > 0 (the ingest refuses any other), so the middle band is too.
  const bandwidth = (u - l) / m;
  const percentB = u > l ? (c - l) / (u - l) : null;
  const signal: BollingerSignal = percentB === null ? 'neutral' : percentB >= 1 ? 'overbought' : percentB <= 0 ? 'oversold' : 'neutral';
  return {
    upper: u,
    middle: m,
    lower: l,
    bandwidth,
    percentB,
    signal,
    reason: percentB === null ? 'no_price_movement' : null,
    description:
      percentB === null
        ? 'Bollinger(20,2): the last 20 closes are identical (σ = 0), so %B is undefined'
        : `Bollinger(20, 2σ population): close ${fmt(c)} at %B ${percentB.toFixed(3)} (bands ${fmt(l)}–${fmt(u)}): ${signal}`,
  };
}

export function atrReading(high: Float64Array, low: Float64Array, close: Float64Array, total: number): AtrResult {
  const n = close.length;
  if (n < MIN_BARS.atr) {
    return {
      value: null,
      signal: null,
      period: ATR_PERIOD,
      reason: shortfall(n, total),
      description: needMore('ATR(14)', MIN_BARS.atr, n, 'high, low and close', total),
    };
  }
  const v = atrSeries(high, low, close)[n - 1];
  const ratio = v / close[n - 1];
  const signal: AtrSignal = ratio >= ATR_HIGH_VOLATILITY ? 'high_volatility' : ratio <= ATR_LOW_VOLATILITY ? 'low_volatility' : 'normal_volatility';
  return {
    value: v,
    signal,
    period: ATR_PERIOD,
    reason: null,
    description: `Wilder ATR(14) = ${fmt(v)} (${(ratio * 100).toFixed(2)}% of close): ${signal} (>= ${ATR_HIGH_VOLATILITY * 100}% high, <= ${ATR_LOW_VOLATILITY * 100}% low)`,
  };
}

export function vwapReading(high: Float64Array, low: Float64Array, close: Float64Array, volume: Float64Array, total: number): VwapResult {
  const n = close.length;
  if (n < MIN_BARS.vwap) {
    return { value: null, signal: null, reason: shortfall(n, total), description: needMore('VWAP', MIN_BARS.vwap, n, 'high, low, close and volume', total) };
  }
  let pv = 0;
  let v = 0;
  for (let i = 0; i < n; i++) {
    pv += ((high[i] + low[i] + close[i]) / 3) * volume[i];
    v += volume[i];
  }
  if (!(v > 0)) {
    return { value: null, signal: null, reason: 'zero_volume', description: `VWAP is undefined: total volume over the ${n} bars is zero` };
  }
  const vwap = pv / v;
  const c = close[n - 1];
  const gap = n < total ? ` (the ${total - n} earlier bar(s) lack high/low/volume)` : '';
  if (n < MIN_BARS.vwapSignal) {
    return {
      value: vwap,
      signal: null,
      reason: shortfall(n, total),
      description: `VWAP over the last ${n} daily bar${gap} = ${fmt(vwap)}, the bar's own typical price; its signal needs ${MIN_BARS.vwapSignal} bars with high, low, close and volume`,
    };
  }
  const rel = (c - vwap) / vwap;
  const signal: VwapSignal = Math.abs(rel) <= VWAP_AT_TOLERANCE ? 'at' : rel > 0 ? 'above' : 'below';
  return {
    value: vwap,
    signal,
    reason: null,
    description: `VWAP over the last ${n} daily bars${gap} = ${fmt(vwap)}; close ${fmt(c)} is ${signal} it (${(rel * 100).toFixed(2)}%, 'at' within ±${VWAP_AT_TOLERANCE * 100}%)`,
  };
}
