/**
 * Indicator series over ascending daily bars, for the technicals snapshot.
 * Each function returns an array as long as its input, NaN where the
 * indicator is not yet defined; inputs must be finite over the range used.
 * Pure functions: no I/O.
 *
 * Conventions (each follows the textbook definition, which is also TA-Lib's; the unit
 * tests check them against npm technicalindicators and independent re-implementations):
 * - SMA(N): arithmetic mean of the last N closes (recomputed per window).
 * - EMA(N): k = 2/(N+1), seeded with the SMA of the first N closes of the
 *   bars supplied (first value at bar N-1), then e = e_prev + k·(x − e_prev).
 *   EMA values therefore depend on where the window starts; the seed's
 *   influence decays as (1−k)^t.
 * - WMA(N): linear weights 1..N, the newest bar weighted N.
 * - RSI(14), Wilder: changes d_t = c_t − c_{t−1}; the first average gain/loss
 *   is the simple mean of the first 14 gains/losses (first value at bar 14),
 *   then avg = (avg_prev·13 + x)/14. RSI = 100·avgGain/(avgGain+avgLoss).
 *   No movement at all (both averages 0) gives NaN, not 50.
 * - MACD(12,26,9): MACD line = EMA12 − EMA26 (each seeded independently on
 *   the first bars supplied, as above, so the line starts at bar 25); signal
 *   = EMA9 of the MACD line seeded with the SMA of its first 9 values (first
 *   at bar 33); histogram = MACD − signal. Needs 34 bars.
 * - Stochastic(14,3): %K = 100·(c − LL14)/(HH14 − LL14) over high/low; %D =
 *   SMA3 of %K. A flat 14-bar range (HH = LL) makes %K undefined (NaN).
 * - Bollinger(20, 2): middle = SMA20; σ = POPULATION standard deviation of
 *   the last 20 closes (divide by N, as Bollinger and TA-Lib do); bands =
 *   middle ± 2σ.
 * - ATR(14), Wilder: TR_t = max(h−l, |h−c_{t−1}|, |l−c_{t−1}|) from bar 1
 *   (bar 0 has no previous close and is not used); first ATR = mean of
 *   TR_1..TR_14 (at bar 14), then ATR = (ATR_prev·13 + TR)/14. Needs 15 bars.
 */

export const RSI_PERIOD = 14;
const MACD_FAST = 12;
export const MACD_SLOW = 26;
export const MACD_SIGNAL = 9;
export const STOCH_K_PERIOD = 14;
export const STOCH_D_PERIOD = 3;
export const BOLLINGER_PERIOD = 20;
const BOLLINGER_STDDEV = 2;
export const ATR_PERIOD = 14;

/** Simple moving average; value at i is the mean of values[i−N+1..i]. */
export function smaSeries(values: ArrayLike<number>, period: number): Float64Array {
  const n = values.length;
  const out = new Float64Array(n).fill(NaN);
  for (let i = period - 1; i < n; i++) {
    let s = 0;
    for (let j = i - period + 1; j <= i; j++) s += values[j];
    out[i] = s / period;
  }
  return out;
}

/**
 * Exponential moving average, k = 2/(N+1), seeded with the SMA of the first N
 * finite values (NaN values before the first finite one are skipped, so the
 * function can run on a series that itself starts late, like the MACD line).
 */
export function emaSeries(values: ArrayLike<number>, period: number): Float64Array {
  const n = values.length;
  const out = new Float64Array(n).fill(NaN);
  let start = 0;
  while (start < n && !Number.isFinite(values[start])) start++;
  if (n - start < period) return out;
  const k = 2 / (period + 1);
  let s = 0;
  for (let j = start; j < start + period; j++) s += values[j];
  let e = s / period;
  out[start + period - 1] = e;
  for (let i = start + period; i < n; i++) {
    e = e + k * (values[i] - e);
    out[i] = e;
  }
  return out;
}

/** Linearly weighted moving average, weights 1..N with the newest weighted N. */
export function wmaSeries(values: ArrayLike<number>, period: number): Float64Array {
  const n = values.length;
  const out = new Float64Array(n).fill(NaN);
  const denom = (period * (period + 1)) / 2;
  for (let i = period - 1; i < n; i++) {
    let s = 0;
    for (let w = 1; w <= period; w++) s += w * values[i - period + w];
    out[i] = s / denom;
  }
  return out;
}

/** Wilder RSI; first value at index `period`. Null-equivalent (NaN) when there was no movement. */
export function rsiSeries(close: ArrayLike<number>, period = RSI_PERIOD): Float64Array {
  const n = close.length;
  const out = new Float64Array(n).fill(NaN);
  if (n <= period) return out;
  let gain = 0;
  let loss = 0;
  for (let i = 1; i <= period; i++) {
    const d = close[i] - close[i - 1];
    if (d > 0) gain += d;
    else loss -= d;
  }
  gain /= period;
  loss /= period;
  const rsi = (g: number, l: number) => (g + l === 0 ? NaN : (100 * g) / (g + l));
  out[period] = rsi(gain, loss);
  for (let i = period + 1; i < n; i++) {
    const d = close[i] - close[i - 1];
    gain = (gain * (period - 1) + (d > 0 ? d : 0)) / period;
    loss = (loss * (period - 1) + (d < 0 ? -d : 0)) / period;
    out[i] = rsi(gain, loss);
  }
  return out;
}

interface MacdSeries {
  macd: Float64Array;
  signal: Float64Array;
  histogram: Float64Array;
}

/** MACD line, signal and histogram (EMA-based, see the module comment for seeding). */
export function macdSeries(close: ArrayLike<number>, fast = MACD_FAST, slow = MACD_SLOW, signalPeriod = MACD_SIGNAL): MacdSeries {
  const n = close.length;
  const f = emaSeries(close, fast);
  const s = emaSeries(close, slow);
  const macd = new Float64Array(n).fill(NaN);
  for (let i = 0; i < n; i++) if (Number.isFinite(f[i]) && Number.isFinite(s[i])) macd[i] = f[i] - s[i];
  const signal = emaSeries(macd, signalPeriod);
  const histogram = new Float64Array(n).fill(NaN);
  for (let i = 0; i < n; i++) if (Number.isFinite(signal[i])) histogram[i] = macd[i] - signal[i];
  return { macd, signal, histogram };
}

/** Highest high and lowest low over the `period` bars ending at `end`. */
export function highestLowest(high: ArrayLike<number>, low: ArrayLike<number>, end: number, period: number): [number, number] {
  let hh = -Infinity;
  let ll = Infinity;
  for (let j = end - period + 1; j <= end; j++) {
    if (high[j] > hh) hh = high[j];
    if (low[j] < ll) ll = low[j];
  }
  return [hh, ll];
}

/** Fast stochastic: %K over `kPeriod` bars, %D = SMA of %K over `dPeriod`. */
export function stochasticSeries(
  high: ArrayLike<number>,
  low: ArrayLike<number>,
  close: ArrayLike<number>,
  kPeriod = STOCH_K_PERIOD,
  dPeriod = STOCH_D_PERIOD,
): { k: Float64Array; d: Float64Array } {
  const n = close.length;
  const k = new Float64Array(n).fill(NaN);
  const d = new Float64Array(n).fill(NaN);
  for (let i = kPeriod - 1; i < n; i++) {
    const [hh, ll] = highestLowest(high, low, i, kPeriod);
    k[i] = hh > ll ? (100 * (close[i] - ll)) / (hh - ll) : NaN;
  }
  for (let i = kPeriod + dPeriod - 2; i < n; i++) {
    let s = 0;
    for (let j = i - dPeriod + 1; j <= i; j++) s += k[j];
    d[i] = s / dPeriod; // NaN propagates when any %K in the window is undefined
  }
  return { k, d };
}

/** Bollinger bands with the POPULATION standard deviation (divide by N). */
export function bollingerSeries(
  close: ArrayLike<number>,
  period = BOLLINGER_PERIOD,
  mult = BOLLINGER_STDDEV,
): { upper: Float64Array; middle: Float64Array; lower: Float64Array; stddev: Float64Array } {
  const n = close.length;
  const middle = smaSeries(close, period);
  const upper = new Float64Array(n).fill(NaN);
  const lower = new Float64Array(n).fill(NaN);
  const stddev = new Float64Array(n).fill(NaN);
  for (let i = period - 1; i < n; i++) {
    const m = middle[i];
    let ss = 0;
    for (let j = i - period + 1; j <= i; j++) ss += (close[j] - m) * (close[j] - m);
    const sd = Math.sqrt(ss / period);
    stddev[i] = sd;
    upper[i] = m + mult * sd;
    lower[i] = m - mult * sd;
  }
  return { upper, middle, lower, stddev };
}

/** True range; index 0 is NaN (no previous close). */
function trueRangeSeries(high: ArrayLike<number>, low: ArrayLike<number>, close: ArrayLike<number>): Float64Array {
  const n = close.length;
  const tr = new Float64Array(n).fill(NaN);
  for (let i = 1; i < n; i++) {
    const pc = close[i - 1];
    tr[i] = Math.max(high[i] - low[i], Math.abs(high[i] - pc), Math.abs(low[i] - pc));
  }
  return tr;
}

/** Wilder ATR; first value at index `period` (mean of TR_1..TR_period). */
export function atrSeries(high: ArrayLike<number>, low: ArrayLike<number>, close: ArrayLike<number>, period = ATR_PERIOD): Float64Array {
  const n = close.length;
  const out = new Float64Array(n).fill(NaN);
  if (n <= period) return out;
  const tr = trueRangeSeries(high, low, close);
  let a = 0;
  for (let i = 1; i <= period; i++) a += tr[i];
  a /= period;
  out[period] = a;
  for (let i = period + 1; i < n; i++) {
    a = (a * (period - 1) + tr[i]) / period;
    out[i] = a;
  }
  return out;
}
